/**
 * The in-process floor for bench/throughput.ts: the same one-node graph the service's chatbot agent
 * runs (the fake model over the conversation), on the library's own saver for the backend (the
 * database set up as the service sets it up), with sync durability, driven by `concurrency` loops
 * inside this process. No HTTP, no agenthost layers. Prints one JSON line: runs and CPU time.
 *
 *   node --import tsx bench/throughput-floor.ts <memory|filedb|serverdb> <invoke|stream> <seconds> <concurrency> [path or url]
 */
import { randomUUID } from "node:crypto";
import { HumanMessage } from "@langchain/core/messages";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import pg from "pg";
import { FakeChatModel } from "../src/models/fake-chat-model.ts";

const [backend, route, seconds, concurrency, target] = process.argv.slice(2) as [string, string, string, string, string | undefined];
const WARMUP_MS = 1_500;

async function openSaver(): Promise<{ saver: BaseCheckpointSaver; close(): Promise<void> }> {
  if (backend === "memory") return { saver: new MemorySaver(), close: async () => {} };
  if (backend === "filedb") {
    const db = new Database(target!, { timeout: 5_000 });
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
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

const model = new FakeChatModel({});
const { saver, close } = await openSaver();
const graph = new StateGraph(MessagesAnnotation)
  .addNode("chatbot", async (state, config) => ({ messages: [await model.invoke(state.messages, config)] }))
  .addEdge("__start__", "chatbot")
  .addEdge("chatbot", "__end__")
  .compile({ checkpointer: saver });

async function once(): Promise<void> {
  const input = { messages: [new HumanMessage("Hello! Please answer briefly.")] };
  const config = { configurable: { thread_id: randomUUID() }, durability: "sync" as const };
  if (route === "invoke") {
    await graph.invoke(input, config);
    return;
  }
  for await (const chunk of await graph.stream(input, { ...config, streamMode: ["updates", "messages"] })) void chunk;
}

// Runs may finish without ever yielding to the timer phase, so the loops themselves start the measurement.
const warmEnd = performance.now() + WARMUP_MS;
const deadline = warmEnd + Number(seconds) * 1_000;
let measuring = false;
let runs = 0;
let cpuAtStart = process.cpuUsage();
let startedAt = 0;

await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (performance.now() < deadline) {
      await once();
      runs++;
      if (!measuring && performance.now() >= warmEnd) {
        measuring = true;
        runs = 0;
        cpuAtStart = process.cpuUsage();
        startedAt = performance.now();
      }
    }
  }),
);
const cpu = process.cpuUsage(cpuAtStart);
const elapsed = (performance.now() - startedAt) / 1_000;
await close();
if (!measuring) throw new Error("the measurement never started");
process.stdout.write(`${JSON.stringify({ runs, seconds: elapsed, cpuMs: (cpu.user + cpu.system) / 1_000 })}\n`);
