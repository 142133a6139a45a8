// The client's reading of resumable streams: each frame's sequence number (SSE `id:`, JSON Lines
// `seq`), and which failures a resumable stream picks up after.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AgentClientError } from "../../src/client/errors.ts";
import { mayResume, positionedFrames } from "../../src/client/resumable.ts";
import { decodeSse } from "../../src/client/sse.ts";

async function* linesOf(text: string): AsyncGenerator<string> {
  for (const line of text.split("\n")) yield line;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

test("SSE frames carry their id; [DONE] ends them", async () => {
  const text = 'id: 1\ndata: {"type":"token","content":"a"}\n\n: keep-alive\n\nid: 2\ndata: {"type":"token","content":"b"}\n\ndata: [DONE]\n\n';
  assert.deepEqual(await collect(positionedFrames(linesOf(text), "SSE")), [
    { done: false, seq: 1, item: "a" },
    { done: false, seq: 2, item: "b" },
    { done: true },
  ]);
});

test("an id belongs to the frame it is in (the service numbers every event)", async () => {
  const text = 'id: 7\ndata: {"type":"token","content":"a"}\n\ndata: {"type":"token","content":"b"}\n\ndata: [DONE]\n\n';
  const frames = await collect(decodeSse(linesOf(text)));
  assert.deepEqual(frames, [{ done: false, data: '{"type":"token","content":"a"}', id: "7" }, { done: false, data: '{"type":"token","content":"b"}' }, { done: true }]);
});

test("JSON Lines frames carry their seq", async () => {
  const text = '{"type":"token","content":"a","seq":3}\n{"type":"token","content":"b","seq":4}\n';
  assert.deepEqual(await collect(positionedFrames(linesOf(text), "JSON Lines")), [
    { done: false, seq: 3, item: "a" },
    { done: false, seq: 4, item: "b" },
  ]);
});

test("a cut connection or an SSE stream ended before [DONE] may resume; answers of the service and timeouts may not", async () => {
  const early = await collect(positionedFrames(linesOf('id: 1\ndata: {"type":"token","content":"a"}\n\n'), "SSE")).catch((error: unknown) => error);
  assert.ok(early instanceof AgentClientError);
  assert.equal(mayResume(early), true);
  assert.equal(mayResume(new AgentClientError("broken", { kind: "network" })), true);
  assert.equal(mayResume(new AgentClientError("failed", { kind: "event", errorCode: "run_cancelled" })), false);
  assert.equal(mayResume(new AgentClientError("404", { kind: "http", statusCode: 404 })), false);
  assert.equal(mayResume(new AgentClientError("slow", { kind: "timeout" })), false);
  assert.equal(mayResume(new Error("other")), false);
});
