// The message store under LangGraph's own operations, on memory, SQLite and PostgreSQL: updates by
// id, RemoveMessage, updateState, state history, two workers writing one conversation in turn, a
// cold read by a new worker, a failed run's unsaved changes, a write that fails half-way, and a run
// taken back (the Platform API's rollback). SQLite and PostgreSQL run the service's own savers, which
// write a checkpoint with its rows and listing at once.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type BetterSqlite3 from "better-sqlite3";
import Database from "../../src/checkpoints/sqlite-driver.ts";
import pg from "pg";
import { AIMessage, HumanMessage, RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, interrupt, MessagesAnnotation, REMOVE_ALL_MESSAGES, StateGraph } from "@langchain/langgraph";
import { JsonPlusSerializer, MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { ownerConfigurable } from "../../src/contract/conversation-owner-key.ts";
import { MemoryMessageRows, PostgresMessageRows, SqliteMessageRows, type MessageRows } from "../../src/checkpoints/message-rows.ts";
import { isMessageRefs, MessageStoreSaver } from "../../src/checkpoints/message-store.ts";
import { BatchedPostgresSaver } from "../../src/checkpoints/pg-saver.ts";
import { SqliteFileSaver } from "../../src/checkpoints/sqlite-saver.ts";
import { MemoryThreadIndex } from "../../src/checkpoints/thread-index.ts";
import { PostgresThreadRewinder, RebuildingThreadRewinder, SqliteThreadRewinder } from "../../src/checkpoints/thread-rewind.ts";
import { PostgresThreadIndex, SqliteThreadIndex } from "../../src/checkpoints/thread-index-sql.ts";
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

/** One node that asks (an interrupt) and answers with what it was told. */
function askingGraph(saver: BaseCheckpointSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode("ask", () => {
      const answer: unknown = interrupt("question");
      return { messages: [new AIMessage(`the answer was ${String(answer)}`)] };
    })
    .addEdge("__start__", "ask")
    .addEdge("ask", "__end__")
    .compile({ checkpointer: saver });
}

interface Store {
  readonly name: string;
  /** A new worker's saver over the same storage (a fresh cache). */
  worker(): MessageStoreSaver;
  /**
   * Make checkpoint writes fail from now on (`true`) or no longer (`false`). On the databases the
   * conversation list's part fails, so the message rows and checkpoint of the same write must go too.
   */
  failWrites(fail: boolean): Promise<void>;
  /** How many message rows the thread has stored, and its conversation list entry's message count. */
  stored(thread: string): Promise<{ rows: number; listed: number | null | undefined }>;
  close(): Promise<void>;
}

const FAILURE = "the database went away";

function memoryStore(): Store {
  const inner = new MemorySaver();
  const rows = new MemoryMessageRows();
  const index = new MemoryThreadIndex();
  const put = inner.put.bind(inner);
  return {
    name: "memory",
    worker: () => new MessageStoreSaver(inner, rows, 10_000, index, undefined, new RebuildingThreadRewinder(inner, rows)),
    async failWrites(fail) {
      inner.put = fail ? () => Promise.reject(new Error(FAILURE)) : put;
    },
    async stored(thread) {
      const page = await index.list("u", "a", 0, 100);
      return { rows: (await rows.maxKey(thread)) + 1, listed: page.entries.find((e) => e.storageKey === thread)?.messageCount };
    },
    close: async () => {},
  };
}

function sqliteStore(): Store {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-message-store-"));
  const dbs: BetterSqlite3.Database[] = [];
  const open = () => {
    const db = new Database(path.join(dir, "store.sqlite"));
    db.pragma("busy_timeout = 10000");
    db.pragma("journal_mode = WAL");
    dbs.push(db);
    return db;
  };
  return {
    name: "sqlite",
    worker() {
      const db = open();
      const rows = new SqliteMessageRows(db);
      const index = new SqliteThreadIndex(db);
      const saver = new SqliteFileSaver(db, new JsonPlusSerializer(), rows, index);
      return new MessageStoreSaver(saver, rows, 10_000, index, saver, new SqliteThreadRewinder(db));
    },
    async failWrites(fail) {
      dbs[0]!.exec(fail ? `CREATE TRIGGER fail_listing BEFORE INSERT ON agenthost_threads BEGIN SELECT RAISE(ABORT, '${FAILURE}'); END` : "DROP TRIGGER fail_listing");
    },
    async stored(thread) {
      const db = dbs[0]!;
      const rows = db.prepare("SELECT count(*) FROM agenthost_messages WHERE thread_id = ?").pluck().get(thread) as number;
      const listed = db.prepare("SELECT message_count FROM agenthost_threads WHERE thread_id = ?").pluck().get(thread) as number | undefined;
      return { rows, listed };
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
    return {
      pool,
      saver: new BatchedPostgresSaver(pool, new JsonPlusSerializer(), schema),
      rows: new PostgresMessageRows(pool, schema),
      index: new PostgresThreadIndex(pool, schema),
      rewinder: new PostgresThreadRewinder(pool, schema),
    };
  };
  return {
    name: "postgres",
    async setup() {
      const { saver, rows, index } = make();
      await saver.setup();
      await rows.setup();
      await index.setup();
    },
    worker() {
      const { saver, rows, index, rewinder } = make();
      return new MessageStoreSaver(saver, rows, 10_000, index, saver, rewinder);
    },
    async failWrites(fail) {
      await pools[0]!.query(
        fail
          ? `CREATE FUNCTION "${schema}".fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '${FAILURE}'; END $$;
             CREATE TRIGGER fail_listing BEFORE INSERT ON "${schema}".agenthost_threads FOR EACH ROW EXECUTE FUNCTION "${schema}".fail()`
          : `DROP TRIGGER fail_listing ON "${schema}".agenthost_threads; DROP FUNCTION "${schema}".fail()`,
      );
    },
    async stored(thread) {
      const rows = await pools[0]!.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".agenthost_messages WHERE thread_id = $1`, [thread]);
      const listed = await pools[0]!.query<{ message_count: number }>(`SELECT message_count FROM "${schema}".agenthost_threads WHERE thread_id = $1`, [thread]);
      return { rows: Number(rows.rows[0]!.n), listed: listed.rows[0]?.message_count };
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
      ((await graphOn(saver).getState({ configurable: { thread_id: thread } })).values as { messages?: BaseMessage[] }).messages ?? [];

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

    test("a checkpoint write that fails stores none of its messages or listing, leaves no dangling reference and reuses no key", async () => {
      const saver = store.worker();
      const owned = (said: string) =>
        graphOn(saver).invoke({ messages: [new HumanMessage(said)] }, { configurable: { thread_id: "half", ...ownerConfigurable("u", "a", "half") } });
      await owned("hello");
      assert.deepEqual(await store.stored("half"), { rows: 2, listed: 2 });
      const checkpoints = async () => {
        let count = 0;
        for await (const _ of saver.list({ configurable: { thread_id: "half" } })) count++;
        return count;
      };
      const before = await checkpoints();
      await store.failWrites(true);
      try {
        await assert.rejects(owned("lost"), new RegExp(FAILURE));
      } finally {
        await store.failWrites(false);
      }
      const stored = await checkpoints();
      // The databases stored the run's first checkpoint (its input; no new message, no listing), not the one that failed.
      assert.ok(stored <= before + 1, `no checkpoint of the failed write: ${before} before, ${stored} after`);
      assert.deepEqual(await store.stored("half"), { rows: 2, listed: 2 }, "nothing of the failed write is stored");
      saver.discard("half");
      await owned("after");
      assert.deepEqual(texts(await read(store.worker(), "half")), ["human:hello", "ai:answer to hello", "human:after", "ai:answer to after"]);
      assert.deepEqual(await store.stored("half"), { rows: 4, listed: 4 });
    });

    test("a conversation deleted and started again under the same id on another worker reuses no key a worker still holds", async () => {
      const [a, b] = [store.worker(), store.worker()];
      await turn(a, "reborn", "before");
      assert.deepEqual(texts(await read(b, "reborn")), ["human:before", "ai:answer to before"]);
      await a.deleteThread("reborn");
      await turn(a, "reborn", "after");
      // b revived the first life's messages; it must not answer the second life with them.
      assert.deepEqual(texts(await read(b, "reborn")), ["human:after", "ai:answer to after"]);
      assert.deepEqual(texts(await read(store.worker(), "reborn")), ["human:after", "ai:answer to after"]);
    });

    /** The thread's latest checkpoint as a run starting now would note it (its id and pending writes). */
    const baseOf = async (saver: MessageStoreSaver, thread: string) => {
      const head = await saver.inner.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "" } });
      return { id: head?.checkpoint.id ?? null, writes: (head?.pendingWrites ?? []).map(([task, channel]) => [task, channel] as const) };
    };
    /** Every stored message row's text, emptied ones included. */
    const rowTexts = async (saver: MessageStoreSaver, thread: string) => {
      const max = await saver.rows.maxKey(thread);
      return [...(await saver.rows.read(thread, Array.from({ length: max + 1 }, (_, key) => key))).values()];
    };

    test("a run taken back leaves its thread as it found it, its messages gone; the next writer, on another worker, reuses no key", async () => {
      const [a, b] = [store.worker(), store.worker()];
      await turn(a, "rewound", "one");
      const base = await baseOf(a, "rewound");
      await turn(b, "rewound", "doomed");
      await b.rewind("rewound", base.id, base.writes, undefined);
      const kept = ["human:one", "ai:answer to one"];
      assert.deepEqual(texts(await read(a, "rewound")), kept);
      assert.deepEqual(texts(await read(b, "rewound")), kept);
      for (const text of await rowTexts(a, "rewound")) assert.ok(!text.includes("doomed"), "a message of the run taken back is still stored");
      for await (const tuple of a.list({ configurable: { thread_id: "rewound" } })) assert.ok(tuple.checkpoint.id <= base.id!, "a checkpoint of the run is left");
      // Worker a last wrote the base: it counts keys on from there, over the rows worker b wrote and
      // the rewind emptied. b still holds those keys' messages; it must read the new ones.
      await turn(a, "rewound", "two");
      const expected = [...kept, "human:two", "ai:answer to two"];
      assert.deepEqual(texts(await read(b, "rewound")), expected);
      assert.deepEqual(texts(await read(store.worker(), "rewound")), expected);
    });

    test("a run taken back on a thread it started empties the thread; one that resumed an interrupt leaves it paused again", async () => {
      const saver = store.worker();
      await turn(saver, "emptied", "only");
      await saver.rewind("emptied", null, [], undefined);
      assert.equal(await saver.getTuple({ configurable: { thread_id: "emptied", checkpoint_ns: "" } }), undefined);
      assert.deepEqual(texts(await read(store.worker(), "emptied")), []);

      const asking = askingGraph(saver);
      const config = { configurable: { thread_id: "paused" } };
      await asking.invoke({ messages: [new HumanMessage("may I?")] }, config);
      const base = await baseOf(saver, "paused");
      assert.ok(base.writes.some(([, channel]) => channel === "__interrupt__"), "the base is paused on an interrupt");
      await asking.invoke(new Command({ resume: "no" }), config);
      assert.deepEqual((await asking.getState(config)).next, []);
      await saver.rewind("paused", base.id, base.writes, undefined);
      const again = askingGraph(store.worker());
      const paused = await again.getState(config);
      assert.deepEqual(paused.next, ["ask"]);
      assert.equal(paused.tasks[0]?.interrupts[0]?.value, "question");
      await again.invoke(new Command({ resume: "yes" }), config);
      assert.deepEqual(texts(await read(store.worker(), "paused")), ["human:may I?", "ai:the answer was yes"]);
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

test("a new conversation is listed by the steps that change its messages, not by its empty input step", async () => {
  const listed: number[] = [];
  const index = new (class extends MemoryThreadIndex {
    override async touch(...args: Parameters<MemoryThreadIndex["touch"]>): Promise<void> {
      listed.push(args[2].messageCount);
      return super.touch(...args);
    }
  })();
  const saver = new MessageStoreSaver(new MemorySaver(), new MemoryMessageRows(), 10_000, index);
  const config = { configurable: { thread_id: "new", ...ownerConfigurable("u", "a", "new") } };
  await graphOn(saver).invoke({ messages: [new HumanMessage("hello")] }, config);
  assert.deepEqual(listed, [1, 2], "the input applied, then the answer");
  const page = await index.list("u", "a", 0, 10);
  assert.deepEqual(page.entries.map((entry) => [entry.threadId, entry.messageCount]), [["new", 2]]);
  // A cold worker reads the conversation before its input step: it lists the two changes only.
  listed.length = 0;
  await graphOn(new MessageStoreSaver(saver.inner, saver.rows, 10_000, index)).invoke({ messages: [new HumanMessage("again")] }, config);
  assert.deepEqual(listed, [3, 4]);
});
