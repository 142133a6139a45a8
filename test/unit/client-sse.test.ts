// The client's SSE decoding and event reading without a server: frames from lines, the end marker,
// cut-off streams, every split point of a body through the line splitter, and what each event
// becomes (text, message, error, skipped, malformed).
import assert from "node:assert/strict";
import { test } from "node:test";
import { CallScope } from "../../src/client/call-scope.ts";
import { AgentClientError } from "../../src/client/errors.ts";
import { readEvent } from "../../src/client/events.ts";
import { readLines } from "../../src/client/lines.ts";
import { decodeSse, type SseData } from "../../src/client/sse.ts";

async function* from(lines: string[]): AsyncGenerator<string> {
  yield* lines;
}

async function decode(lines: string[]): Promise<{ frames: SseData[]; error: unknown }> {
  const frames: SseData[] = [];
  try {
    for await (const frame of decodeSse(from(lines))) frames.push(frame);
    return { frames, error: undefined };
  } catch (error) {
    return { frames, error };
  }
}

const data = (text: string): SseData => ({ done: false, data: text });
const DONE: SseData = { done: true };

test("a blank line dispatches the data lines before it, joined by newlines", async () => {
  const { frames, error } = await decode(["data: one", "", "data: {\"a\":", "data:  1}", "", "data: [DONE]", ""]);
  assert.equal(error, undefined);
  assert.deepEqual(frames, [data("one"), data('{"a":\n 1}'), DONE]);
});

test("one space after the colon is dropped; no colon means an empty value", async () => {
  const { frames } = await decode(["data:x", "", "data:  two spaces", "", "data", "data", "", "data: [DONE]", ""]);
  assert.deepEqual(frames, [data("x"), data(" two spaces"), data("\n"), DONE]);
});

test("comments, other fields and blank lines without data are skipped", async () => {
  const { frames } = await decode([": keep-alive", "", "event: token", "id: 7", "retry: 10", "", "", "data: a", "", "data: [DONE]", ""]);
  assert.deepEqual(frames, [data("a"), DONE]);
});

test("[DONE] ends the stream: nothing after it is read", async () => {
  let readAfterDone = false;
  async function* lines() {
    yield "data: [DONE]";
    yield "";
    readAfterDone = true;
    yield "data: late";
    yield "";
  }
  const frames: SseData[] = [];
  for await (const frame of decodeSse(lines())) frames.push(frame);
  assert.deepEqual(frames, [DONE]);
  assert.equal(readAfterDone, false);
});

test("a last [DONE] without its blank line still ends the stream cleanly", async () => {
  const { frames, error } = await decode(["data: a", "", "data: [DONE]"]);
  assert.equal(error, undefined);
  assert.deepEqual(frames, [data("a"), DONE]);
});

test("ending without [DONE] is a protocol error that says where the stream stopped", async () => {
  const before = await decode(["data: a", ""]);
  assert.deepEqual(before.frames, [data("a")]);
  assert.ok(before.error instanceof AgentClientError);
  assert.equal(before.error.kind, "protocol");
  assert.match(before.error.message, /ended before \[DONE\]/);

  const middle = await decode(["data: a", "", "data: {\"half\":"]);
  assert.ok(middle.error instanceof AgentClientError);
  assert.match(middle.error.message, /ended in the middle of a frame/);

  const twoLines = await decode(["data: [DONE]", "data: more"]);
  assert.ok(twoLines.error instanceof AgentClientError, "[DONE] and more data without a blank line is not the marker");
  assert.deepEqual((await decode([])).frames, []);
  assert.ok((await decode([])).error instanceof AgentClientError, "an empty body");
});

test("a body split at any byte, or at any two bytes, decodes to the same frames", async () => {
  const body = Buffer.from(
    `: hi\r\ndata: ${JSON.stringify({ type: "token", content: "héllo 👋" })}\r\n\r\n` +
      'data: {"type":\ndata: "message"}\r\rdata: [DONE]\n\n',
    "utf8",
  );
  const expected = [data('{"type":"token","content":"héllo 👋"}'), data('{"type":\n"message"}'), DONE];
  const decodeChunks = async (chunks: Uint8Array[]) => {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    const frames: SseData[] = [];
    for await (const frame of decodeSse(readLines(stream, new CallScope(undefined), 0, () => "idle"))) frames.push(frame);
    return frames;
  };
  for (let i = 0; i <= body.length; i++) {
    assert.deepEqual(await decodeChunks([body.subarray(0, i), body.subarray(i)]), expected, `split at ${i}`);
  }
  const short = body.subarray(0, 40);
  const shortExpected = await decodeChunks([short]).catch((error: unknown) => error);
  for (let i = 0; i <= short.length; i++) {
    for (let j = i; j <= short.length; j++) {
      const got = await decodeChunks([short.subarray(0, i), short.subarray(i, j), short.subarray(j)]).catch((error: unknown) => error);
      assert.equal(String(got), String(shortExpected), `split at ${i} and ${j}`);
    }
  }
  assert.deepEqual(await decodeChunks([...body].map((b) => Uint8Array.of(b))), expected, "one byte per chunk");
});

test("events: a token is its text, a message is the message, unknown types are skipped", () => {
  assert.equal(readEvent('{"type":"token","content":"Hi"}', "SSE"), "Hi");
  assert.equal(readEvent('{"type":"token","content":""}', "SSE"), "");
  const message = { type: "ai", content: "whole", run_id: "r" };
  assert.deepEqual(readEvent(JSON.stringify({ type: "message", content: message }), "JSON Lines"), message);
  assert.equal(readEvent('{"type":"custom_progress","content":{}}', "SSE"), undefined);
  assert.equal(readEvent('{"type":"thread"}', "SSE"), undefined);
});

test("events: an error event throws with its code and detail", () => {
  const withCode = () => readEvent('{"type":"error","content":"Model credentials rejected.","error_code":"model_authentication_failed"}', "SSE");
  assert.throws(withCode, (error: unknown) => {
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.kind, "event");
    assert.equal(error.errorCode, "model_authentication_failed");
    assert.equal(error.detail, "Model credentials rejected.");
    assert.equal(error.message, "the agent run failed: Model credentials rejected.");
    return true;
  });
  assert.throws(
    () => readEvent('{"type":"error","content":{"why":"x"},"error_code":7}', "SSE"),
    (error: unknown) => error instanceof AgentClientError && error.errorCode === null && JSON.stringify(error.detail) === '{"why":"x"}',
  );
});

test("events: what is not an event is a protocol error naming the protocol and the reason", () => {
  const cases: Array<[string, RegExp]> = [
    ["{not json", /^malformed SSE frame \(not JSON\): \{not json$/],
    ["[1,2]", /\(no event type\)/],
    ["null", /\(no event type\)/],
    ['{"content":"x"}', /\(no event type\)/],
    ['{"type":5}', /\(no event type\)/],
    ['{"type":"token","content":5}', /\(token content is not a string\)/],
    ['{"type":"message","content":"x"}', /\(message content is not a message\)/],
    ['{"type":"message","content":{"type":"ai"}}', /\(message content is not a message\)/],
    ['{"type":"message","content":{"content":"x"}}', /\(message content is not a message\)/],
  ];
  for (const [raw, why] of cases) {
    assert.throws(
      () => readEvent(raw, "SSE"),
      (error: unknown) => error instanceof AgentClientError && error.kind === "protocol" && why.test(error.message) && error.detail === raw,
      raw,
    );
  }
  assert.throws(() => readEvent("x", "JSON Lines"), /^AgentClientError: malformed JSON Lines frame/);
});

test("events: a malformed frame is shown whole up to 200 characters, cut with an ellipsis beyond", () => {
  const frame = (length: number) => `{"type":"token","content":${"1".repeat(length - 27)}}`;
  const shown = (raw: string) => {
    try {
      readEvent(raw, "SSE");
    } catch (error) {
      assert.ok(error instanceof AgentClientError && error.detail === raw);
      return error.message.slice(error.message.indexOf("): ") + 3);
    }
    assert.fail("no error");
  };
  assert.equal(frame(200).length, 200);
  assert.equal(shown(frame(200)), frame(200));
  assert.equal(shown(frame(201)), `${frame(201).slice(0, 200)}…`);
  assert.equal(shown(frame(5_000)), `${frame(5_000).slice(0, 200)}…`);
});
