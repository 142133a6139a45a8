/**
 * The library's floor for bench/throughput.ts: the one-node graph the service's chatbot agent runs
 * (the fake model over the conversation), compiled on the library's own saver for the backend with
 * the database set up as the service sets it up, and one run of it as invoke or as a stream with
 * the modes the service streams with. No agenthost code but the fake model.
 */
import { randomUUID } from "node:crypto";
import { HumanMessage } from "@langchain/core/messages";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "../src/checkpoints/sqlite-driver.ts";
import pg from "pg";
import { WAL_AUTOCHECKPOINT_PAGES } from "../src/checkpoints/sqlite-file.ts";
import { FakeChatModel } from "../src/models/fake-chat-model.ts";

async function openSaver(backend: string, target: string | undefined): Promise<{ saver: BaseCheckpointSaver; close(): Promise<void> }> {
  if (backend === "memory") return { saver: new MemorySaver(), close: async () => {} };
  if (backend === "filedb") {
    const db = new Database(target!, { timeout: 5_000 });
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    return {
      saver: new SqliteSaver(db),
      close: async () => {
        db.close();
      },
    };
  }
  const [url, schema] = target!.split("#") as [string, string];
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const saver = new PostgresSaver(pool, undefined, { schema });
  await saver.setup();
  return { saver, close: () => pool.end() };
}

export interface FloorGraph {
  /** One run on a new thread: its final message's text. */
  invoke(message: string): Promise<string>;
  /** One run on a new thread, streamed: each `[mode, payload]` chunk of the `updates` and `messages` modes as it comes. */
  stream(message: string): AsyncIterable<[string, unknown]>;
  close(): Promise<void>;
}

export async function openFloorGraph(backend: string, target: string | undefined): Promise<FloorGraph> {
  const model = new FakeChatModel({});
  const { saver, close } = await openSaver(backend, target);
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("chatbot", async (state, config) => ({ messages: [await model.invoke(state.messages, config)] }))
    .addEdge("__start__", "chatbot")
    .addEdge("chatbot", "__end__")
    .compile({ checkpointer: saver });
  const configFor = () => ({ configurable: { thread_id: randomUUID() }, durability: "sync" as const });
  return {
    async invoke(message) {
      const state = await graph.invoke({ messages: [new HumanMessage(message)] }, configFor());
      return String(state.messages.at(-1)?.content);
    },
    async *stream(message) {
      yield* await graph.stream({ messages: [new HumanMessage(message)] }, { ...configFor(), streamMode: ["updates", "messages"] });
    },
    close,
  };
}
