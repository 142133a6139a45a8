import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { storageKey } from "../../src/auth/storage-key.ts";
import { FakeChatModel } from "../../src/models/fake-chat-model.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { parseEvents } from "../fixtures/providers/events.ts";
import { NOTES_FILE } from "../fixtures/deep-agent-scripted.ts";
import { DATABASE_URL } from "../helpers/postgres.ts";

/** The deep agent: its exact tools, virtual files in checkpoint state, and the offline script. */

const ROOT = path.resolve(import.meta.dirname, "../..");
const FIXTURE = path.join(ROOT, "test/fixtures/deep-agent-scripted.ts");

/** The tools the model is offered and the agent can run: the spec's nine plus the library's `task`. */
const EXPECTED_TOOLS = ["add", "edit_file", "glob", "grep", "ls", "multiply", "read_file", "task", "write_file", "write_todos"];

function toolNodeNames(service: RunningService, agent: string): string[] {
  const graph = service.runtime.registry.get(agent)!.graph as unknown as { nodes: Record<string, { bound?: { tools?: Array<{ name: string }> } }> };
  return (graph.nodes.tools?.bound?.tools ?? []).map((t) => t.name).sort();
}


for (const backend of ["filedb", "serverdb"] as const) describe(`deep-agent (${backend})`, { concurrency: false }, () => {
  let service: RunningService;
  let dir: string;
  const schema = `deep_agent_${process.pid}_${Date.now()}`;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-deep-agent-"));
    service = await startService({
      AGENT_PATHS: JSON.stringify([`${FIXTURE}:scriptedDeepAgent`]),
      MEMORY_BACKEND: backend,
      ...(backend === "filedb"
        ? { FILEDB_DB_PATH: path.join(dir, "checkpoints.sqlite") }
        : { DATABASE_URL, SERVERDB_SCHEMA: schema }),
    });
  });
  after(async () => {
    await service?.close();
    fs.rmSync(dir, { recursive: true, force: true });
    if (backend === "serverdb") {
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  });

  test("its tools are exactly the spec's list plus the subagent tool: no execute, no delete", async () => {
    const response = await call(service, "POST", "/deep-agent/invoke", { input: { message: "What can you do?" } });
    assert.equal(response.status, 200);
    const model = service.runtime.models.deepAgent;
    assert.ok(model instanceof FakeChatModel);
    assert.deepEqual([...model.boundToolNames].sort(), EXPECTED_TOOLS, "tools offered to the model");
    assert.deepEqual(toolNodeNames(service, "deep-agent"), EXPECTED_TOOLS, "tools the agent can run");
  });

  test("context summarisation is part of the graph", () => {
    const graph = service.runtime.registry.get("deep-agent")!.graph as unknown as { channels: Record<string, unknown> };
    assert.ok("_summarizationEvent" in graph.channels, Object.keys(graph.channels).join(", "));
  });

  test("a scripted conversation writes, edits and reads a virtual file over SSE; the file lives in checkpoint state", async () => {
    const threadId = "notes-thread";
    const response = await call(service, "POST", "/scripted-deep-agent/stream", {
      input: { message: "Keep a note." },
      thread_id: threadId,
      stream_tokens: false,
    });
    assert.equal(response.status, 200);
    const { events, done } = parseEvents("sse", await response.text());
    assert.ok(done);
    const messages = events.filter((e) => e.type === "message").map((e) => e.content as Record<string, unknown>);
    const calls = messages.flatMap((m) => (m.tool_calls as Array<{ name: string }>).map((c) => c.name));
    assert.deepEqual(calls, ["write_file", "edit_file", "read_file"]);
    const toolAnswers = messages.filter((m) => m.type === "tool").map((m) => JSON.stringify(m.content));
    assert.match(toolAnswers[2]!, /hello there/);
    assert.equal(messages.at(-1)?.content, "Done: the note says hello there.");

    const key = storageKey("service", "scripted-deep-agent", threadId);
    const graph = service.runtime.registry.get("scripted-deep-agent")!.graph;
    const state = await graph.getState({ configurable: { thread_id: key } });
    const file = (state.values as { files: Record<string, { content: unknown }> }).files[NOTES_FILE];
    assert.match(JSON.stringify(file?.content), /hello there/);

    // History shows messages only: never the virtual files.
    const history = await call(service, "GET", `/scripted-deep-agent/history?thread_id=${threadId}`);
    assert.equal(history.status, 200);
    const page = (await history.json()) as { messages: Array<Record<string, unknown>>; total: number };
    assert.deepEqual(page.messages.map((m) => m.type), ["human", "ai", "tool", "ai", "tool", "ai", "tool", "ai"]);
    assert.equal(page.total, 8);
    assert.ok(!JSON.stringify(page).includes('"files"'));

    // Clearing the conversation removes its virtual files with its checkpoints.
    const clear = await call(service, "DELETE", "/scripted-deep-agent/history/clear", { thread_id: threadId });
    assert.equal(clear.status, 200);
    await clear.arrayBuffer();
    const cleared = await graph.getState({ configurable: { thread_id: key } });
    assert.equal((cleared.values as { files?: unknown }).files, undefined);
    assert.equal((cleared.values as { messages?: unknown }).messages, undefined);
    const after = (await (await call(service, "GET", `/scripted-deep-agent/history?thread_id=${threadId}`)).json()) as { total: number };
    assert.equal(after.total, 0);
  });

  test("the same conversation with an ordinary invoke returns the final answer", async () => {
    const response = await call(service, "POST", "/scripted-deep-agent/invoke", { input: { message: "Again." } });
    const body = (await response.json()) as Record<string, unknown>;
    assert.equal(response.status, 200);
    assert.equal(body.content, "Done: the note says hello there.");
  });
});

test("npm run deep-agent:offline finishes a scripted conversation offline within 120 s", { timeout: 120_000 }, async () => {
  const child = spawn("npm", ["run", "--silent", "deep-agent:offline"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  assert.equal(code, 0, stderr);
  assert.match(stdout, /write_file\(/);
  assert.match(stdout, /edit_file\(/);
  assert.match(stdout, /read_file\(/);
  assert.match(stdout, /ok: wrote, edited and read \/notes\/plan\.md/);
});
