// `npm run deep-agent:offline`: a scripted deep-agent conversation with no network and no key. The
// built-in deep agent (the same definition the service registers) runs on the fake model following a
// script of tool calls: it writes a virtual file, edits it, reads it back and answers. The script
// checks the file and the transcript, and fails if anything differs or the run exceeds 120 seconds.
import { HumanMessage, isAIMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { unwrapGraph } from "../src/agents/agent.ts";
import { deepAgent } from "../src/agents/builtin/deep-agent/index.ts";
import { storageKey } from "../src/auth/storage-key.ts";
import { loadConfig } from "../src/config/load.ts";
import { FakeChatModel } from "../src/models/fake-chat-model.ts";

const LIMIT_MS = 120_000;
const watchdog = setTimeout(() => {
  console.error(`deep-agent offline run exceeded ${LIMIT_MS / 1000} s`);
  process.exit(1);
}, LIMIT_MS);
watchdog.unref();

const FILE = "/notes/plan.md";
const OFFLINE_SCRIPT = [
  { toolCalls: [{ id: "call_write", name: "write_file", args: { file_path: FILE, content: "# Plan\n\n- draft the outline\n" } }] },
  { toolCalls: [{ id: "call_edit", name: "edit_file", args: { file_path: FILE, old_string: "draft the outline", new_string: "review the outline" } }] },
  { toolCalls: [{ id: "call_read", name: "read_file", args: { file_path: FILE } }] },
  { content: `The plan in ${FILE} now says: review the outline.` },
];

function fail(message: string): never {
  console.error(`deep-agent offline run failed: ${message}`);
  process.exit(1);
}

function line(message: BaseMessage): string {
  const calls = isAIMessage(message) && message.tool_calls?.length
    ? ` -> ${message.tool_calls.map((c) => `${c.name}(${JSON.stringify(c.args)})`).join(", ")}`
    : "";
  return `${message.getType().padEnd(5)} ${JSON.stringify(message.text).slice(0, 100)}${calls}`;
}

const started = performance.now();
const config = loadConfig({ USE_FAKE_MODEL: "true", ENV_MODE: "development" });
const model = new FakeChatModel({ script: OFFLINE_SCRIPT });
const checkpointer = new MemorySaver();
const built = await deepAgent.graphFactory!({
  config,
  model,
  models: { default: model, deepAgent: model, select: () => undefined },
  tools: [],
  checkpointer,
});
const graph = unwrapGraph(built) ?? fail("the deep agent did not build a graph");
graph.checkpointer = checkpointer;

const threadKey = storageKey("offline-user", "deep-agent", "offline-demo");
const runConfig = { configurable: { thread_id: threadKey }, recursionLimit: 50, durability: "sync" as const };
const result = (await graph.invoke({ messages: [new HumanMessage("Write a short plan, then fix its first item.")] }, runConfig)) as {
  messages: BaseMessage[];
  files?: Record<string, { content: unknown }>;
};

console.log("transcript:");
for (const message of result.messages) console.log(`  ${line(message)}`);

const calls = result.messages.flatMap((m) => (isAIMessage(m) ? (m.tool_calls ?? []).map((c) => c.name) : []));
if (calls.join(",") !== "write_file,edit_file,read_file") fail(`unexpected tool calls: ${calls.join(", ")}`);
const toolAnswers = result.messages.filter((m) => m.getType() === "tool").map((m) => m.text);
if (!toolAnswers[2]?.includes("review the outline")) fail(`read_file did not return the edited text: ${toolAnswers[2]}`);
const file = result.files?.[FILE];
const content = Array.isArray(file?.content) ? file.content.join("\n") : String(file?.content ?? "");
if (!content.includes("- review the outline")) fail(`the virtual file holds ${JSON.stringify(file)}`);
const final = result.messages.at(-1);
if (!final || !isAIMessage(final) || !final.text.includes("review the outline")) fail("no final answer");

const saved = await graph.getState(runConfig);
if (!saved.values.files?.[FILE]) fail("the virtual file is not in the checkpoint");

console.log(`virtual file ${FILE}:\n${content.replace(/^/gm, "  ")}`);
console.log(`ok: wrote, edited and read ${FILE} in ${Math.round(performance.now() - started)} ms (limit ${LIMIT_MS / 1000} s)`);
clearTimeout(watchdog);
