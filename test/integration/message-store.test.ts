// The message store under LangGraph's own operations, on memory, SQLite and PostgreSQL: updates by
// id, RemoveMessage, updateState, state history, two workers writing one conversation in turn, a
// cold read by a new worker, a failed run's unsaved changes, and a write that fails half-way.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import pg from "pg";
import { AIMessage, HumanMessage, RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import { MessagesAnnotation, REMOVE_ALL_MESSAGES, StateGraph } from "@langchain/langgraph";
import { MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { MemoryMessageRows, PostgresMessageRows, SqliteMessageRows, type MessageRows } from "../../src/checkpoints/message-rows.ts";
import { isMessageRefs, MessageStoreSaver } from "../../src/checkpoints/message-store.ts";
import { DATABASE_URL } from "../helpers/postgres.ts";


/** What each node does, chosen by the last human message's text. */
function graphOn(saver: BaseCheckpointSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", (state) => {
      const messages = state.messages;
      const said = String(messages.filter((m) => m.getType() === "human").at(-1)?.content ?? "");
      if (said === "fail after changing") {
        // A node that changes a stored message in place, then fails: nothing of it is saved.
        (messages[0] as { content: unknown }).content = "changed but never saved";
        throw new Error("the node failed");
      }
      if (said === "revise") {
        // Like LangChain's approval middleware: change the last AI message's tool calls and return it.
        const lastAi = [...messages].reverse().find((m): m is AIMessage => m.getType() === "ai")!;
        lastAi.tool_calls = [{ id: "call-2", name: "edited", args: { n: 2 }, type: "tool_call" }];
        return { messages: [lastAi] };
      }
      if (said === "edit first") return { messages: [new HumanMessage({ id: messages[0]!.id!, content: "first, edited" })] };
      if (said === "drop first") return { messages: [new RemoveMessage({ id: messages[0]!.id! })] };
      if (said === "start over") return { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), new AIMessage("fresh start")] };
      if (said === "call a tool") return { messages: [new AIMessage({ content: "", tool_calls: [{ id: "call-1", name: "original", args: { n: 1 } }] })] };
      return { messages: [new AIMessage(`answer to ${said}`)] };
    })
    .addEdge("__start__", "agent")
    .addEdge("agent", "__end__")
    .compile({ checkpointer: saver });
}

interface Store {
  readonly name: string;
  /** A new worker's saver over the same storage (a fresh cache). */
  worker(): MessageStoreSaver;
  close(): Promise<void>;
}

function memoryStore(): Store {
  const inner = new MemorySaver();
  const rows = new MemoryMessageRows();
  return { name: "memory", worker: () => new MessageStoreSaver(inner, rows, 10_000), close: async () => {} };
}

function sqliteStore(): Store {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-message-store-"));
  const dbs: Database.Database[] = [];
  return {
    name: "sqlite",
    worker() {
      const db = new Database(path.join(dir, "store.sqlite"));
      db.pragma("busy_timeout = 10000");
      db.pragma("journal_mode = WAL");
      dbs.push(db);
      const inner = new SqliteSaver(db);
      return new MessageStoreSaver(inner, new SqliteMessageRows(db), 10_000);
    },
    async close() {
      for (const db of dbs) db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresStore(): Store & { setup(): Promise<void> } {
  const schema = `t_message_store_${process.pid}_${Date.now()}`;
  const pools: pg.Pool[] = [];
  const make = () => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
    pools.push(pool);
    return { pool, inner: new PostgresSaver(pool, undefined, { schema }), rows: new PostgresMessageRows(pool, schema) };
  };
  return {
    name: "postgres",
    async setup() {
      const { inner, rows } = make();
      await inner.setup();
      await rows.setup();
    },
    worker() {
      const { inner, rows } = make();
      return new MessageStoreSaver(inner, rows, 10_000);
    },
    async close() {
      await pools[0]!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      for (const pool of pools) await pool.end();
    },
  };
}

const texts = (messages: readonly BaseMessage[]) => messages.map((m) => `${m.getType()}:${String(m.content)}`);

for (const makeStore of [memoryStore, sqliteStore, postgresStore]) {
  describe(`message store on ${makeStore().name}`, { concurrency: false }, () => {
    let store: Store;
    before(async () => {
      store = makeStore();
      if ("setup" in store) await (store as { setup(): Promise<void> }).setup();
    });
    after(async () => store?.close());

    const turn = (saver: MessageStoreSaver, thread: string, said: string) =>
      graphOn(saver).invoke({ messages: [new HumanMessage(said)] }, { configurable: { thread_id: thread } });
    const read = async (saver: MessageStoreSaver, thread: string) =>
      ((await graphOn(saver).getState({ configurable: { thread_id: thread } })).values as { messages: BaseMessage[] }).messages;

    test("checkpoints keep key ranges, not the list; updates by id, RemoveMessage and REMOVE_ALL are kept", async () => {
      const saver = store.worker();
      await turn(saver, "ops", "hello");
      await turn(saver, "ops", "edit first");
      assert.deepEqual(texts(await read(saver, "ops")), ["human:first, edited", "ai:answer to hello", "human:edit first"]);
      await turn(saver, "ops", "drop first");
      assert.deepEqual(texts(await read(saver, "ops")), ["ai:answer to hello", "human:edit first", "human:drop first"]);
      const stored = await saver.inner.getTuple({ configurable: { thread_id: "ops", checkpoint_ns: "" } });
      assert.ok(isMessageRefs(stored?.checkpoint.channel_values.messages), "the inner checkpoint holds key ranges");

      // A new worker (cold cache) reads the same list from the rows.
      assert.deepEqual(texts(await read(store.worker(), "ops")), texts(await read(saver, "ops")));
      await turn(saver, "ops", "start over");
      assert.deepEqual(texts(await read(store.worker(), "ops")), ["ai:fresh start"]);
    });

    test("a message changed and returned by a node (an approval's edit) is saved; the change reaches a cold reader", async () => {
      const saver = store.worker();
      await turn(saver, "revise", "call a tool");
      await turn(saver, "revise", "revise");
      const cold = await read(store.worker(), "revise");
      const ai = cold.find((m): m is AIMessage => m.getType() === "ai")!;
      assert.deepEqual(ai.tool_calls?.map((c) => [c.id, c.name, c.args]), [["call-2", "edited", { n: 2 }]]);
    });

    test("updateState and the state history resolve every checkpoint's list", async () => {
      const saver = store.worker();
      const graph = graphOn(saver);
      const config = { configurable: { thread_id: "history" } };
      await turn(saver, "history", "one");
      await graph.updateState(config, { messages: [new AIMessage("added by updateState")] });
      await turn(saver, "history", "two");
      assert.deepEqual(texts(await read(store.worker(), "history")), ["human:one", "ai:answer to one", "ai:added by updateState", "human:two", "ai:answer to two"]);
      // The same operations on LangGraph's plain saver give the reference history.
      const reference = graphOn(new MemorySaver());
      await reference.invoke({ messages: [new HumanMessage("one")] }, config);
      await reference.updateState(config, { messages: [new AIMessage("added by updateState")] });
      await reference.invoke({ messages: [new HumanMessage("two")] }, config);
      const history = async (graph: ReturnType<typeof graphOn>) => {
        const lists: string[][] = [];
        for await (const snapshot of graph.getStateHistory(config)) lists.push(texts((snapshot.values as { messages?: BaseMessage[] }).messages ?? []));
        return lists;
      };
      const expected = await history(reference);
      assert.ok(expected.length > 3);
      assert.deepEqual(await history(graphOn(store.worker())), expected);
    });

    test("two workers writing one conversation in turn never reuse a key or miss the other's messages", async () => {
      const [a, b] = [store.worker(), store.worker()];
      for (let i = 0; i < 6; i++) await turn(i % 2 ? b : a, "shared", `turn ${i}`);
      const expected = Array.from({ length: 6 }, (_, i) => [`human:turn ${i}`, `ai:answer to turn ${i}`]).flat();
      assert.deepEqual(texts(await read(a, "shared")), expected);
      assert.deepEqual(texts(await read(b, "shared")), expected);
      assert.deepEqual(texts(await read(store.worker(), "shared")), expected);
    });

    test("a failed run's in-place changes are forgotten; the next run starts from what was saved", async () => {
      const saver = store.worker();
      await turn(saver, "failed", "hello");
      await assert.rejects(turn(saver, "failed", "fail after changing"), /the node failed/);
      saver.discard("failed");
      await turn(saver, "failed", "again");
      const messages = await read(store.worker(), "failed");
      assert.equal(messages[0]!.content, "hello");
      assert.deepEqual(texts(messages).slice(-2), ["human:again", "ai:answer to again"]);
    });

    test("a checkpoint write that fails after its messages were stored leaves no dangling reference and no reused key", async () => {
      const saver = store.worker();
      await turn(saver, "half", "hello");
      const inner = saver.inner as { put: BaseCheckpointSaver["put"] };
      const put = inner.put.bind(saver.inner);
      inner.put = async () => {
        throw new Error("the database went away");
      };
      await assert.rejects(turn(saver, "half", "lost"), /the database went away/);
      inner.put = put;
      saver.discard("half");
      await turn(saver, "half", "after");
      assert.deepEqual(texts(await read(store.worker(), "half")), ["human:hello", "ai:answer to hello", "human:after", "ai:answer to after"]);
    });
  });
}

test("stored rows are read in slices; a missing row is reported, not silently skipped", async () => {
  const rows: MessageRows = new MemoryMessageRows();
  const saver = new MessageStoreSaver(new MemorySaver(), rows, 10_000);
  await graphOn(saver).invoke({ messages: [new HumanMessage("hello")] }, { configurable: { thread_id: "t" } });
  await rows.deleteThread("t");
  const cold = new MessageStoreSaver(saver.inner, rows, 10_000);
  await assert.rejects(graphOn(cold).getState({ configurable: { thread_id: "t" } }), { name: "MissingMessagesError" });
});
