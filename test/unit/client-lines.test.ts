// The client's line splitter on in-memory bodies: every line ending, chunk boundaries inside a CRLF
// or a UTF-8 character, the last line without a break, cancellation when the consumer stops, and the
// idle limit on a mocked clock (re-armed by every read, paused while the consumer holds a line).
import assert from "node:assert/strict";
import { afterEach, mock, test } from "node:test";
import { CallScope } from "../../src/client/call-scope.ts";
import { AgentClientError } from "../../src/client/errors.ts";
import { readLines } from "../../src/client/lines.ts";

const encoder = new TextEncoder();

/** A body that delivers exactly these chunks, then ends (or stays open); `cancelled` records a cancel. */
function body(chunks: Array<string | Uint8Array>, { open = false } = {}) {
  const state = { cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk);
      if (!open) controller.close();
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

async function lines(chunks: Array<string | Uint8Array>): Promise<string[]> {
  const out: string[] = [];
  for await (const line of readLines(body(chunks).stream, new CallScope(undefined), 0, () => "idle")) out.push(line);
  return out;
}

test("LF, CRLF and a lone CR all end a line; empty lines are kept", async () => {
  assert.deepEqual(await lines(["a\nb\r\nc\rd\n\ne\r\n\r\n"]), ["a", "b", "c", "d", "", "e", ""]);
});

test("the last line is yielded without a line break; a trailing CR is a line end", async () => {
  assert.deepEqual(await lines(["a\nlast"]), ["a", "last"]);
  assert.deepEqual(await lines(["a\r"]), ["a"]);
  assert.deepEqual(await lines([]), []);
  assert.deepEqual(await lines(["\n"]), [""]);
});

test("a CRLF split across chunks is one line end, not two", async () => {
  assert.deepEqual(await lines(["a\r", "\nb\n"]), ["a", "b"]);
  assert.deepEqual(await lines(["a\r", "b\n"]), ["a", "b"], "a CR followed by anything else ends a line by itself");
  assert.deepEqual(await lines(["a\r", "", "\n"]), ["a"], "an empty chunk in between changes nothing");
});

test("a UTF-8 character split across chunks is decoded whole", async () => {
  const bytes = encoder.encode("héllo 👋\n");
  for (let cut = 0; cut <= bytes.length; cut++) {
    assert.deepEqual(await lines([bytes.subarray(0, cut), bytes.subarray(cut)]), ["héllo 👋"], `cut at byte ${cut}`);
  }
  assert.deepEqual(await lines([...bytes].map((b) => Uint8Array.of(b))), ["héllo 👋"], "one byte per chunk");
});

test("stopping early cancels the body; reading to the end does not", async () => {
  const early = body(["one\ntwo\nthree\n"], { open: true });
  for await (const line of readLines(early.stream, new CallScope(undefined), 0, () => "idle")) {
    assert.equal(line, "one");
    break;
  }
  assert.equal(early.state.cancelled, true);
  assert.equal(early.stream.locked, false, "the reader's lock is released");

  const whole = body(["one\n"]);
  for await (const line of readLines(whole.stream, new CallScope(undefined), 0, () => "idle")) assert.equal(line, "one");
  assert.equal(whole.state.cancelled, false);
  assert.equal(whole.stream.locked, false);
});

/**
 * A body the test feeds by hand. With no buffer (high-water mark 0) the stream pulls only when the
 * reader asks for data, so `reading()` resolves once the reader waits, which is after it armed its timer.
 */
function manualBody() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let waiting = false;
  let onRead: (() => void) | undefined;
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      pull() {
        waiting = true;
        onRead?.();
      },
    },
    { highWaterMark: 0 },
  );
  return {
    stream,
    reading: () =>
      new Promise<void>((resolve) => {
        if (waiting) resolve();
        else onRead = resolve;
      }),
    push: (text: string) => {
      waiting = false;
      controller.enqueue(encoder.encode(text));
    },
    end: () => controller.close(),
  };
}

/** The timeout the scope reports once its timer fired, or undefined while it has not. */
function expired(scope: CallScope): AgentClientError | undefined {
  if (!scope.signal.aborted) return undefined;
  const error = scope.translate(new Error("the body was aborted"));
  assert.ok(error instanceof AgentClientError);
  return error;
}

afterEach(() => mock.timers.reset());

test("the idle limit counts silence between reads, not total time, and not time the consumer holds a line", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  const { stream, reading, push, end } = manualBody();
  const scope = new CallScope(undefined);
  const reader = readLines(stream, scope, 100, () => "the stream was silent for 100 ms")[Symbol.asyncIterator]();

  let next = reader.next();
  await reading();
  mock.timers.tick(90);
  push(": keep-alive\n");
  assert.deepEqual(await next, { done: false, value: ": keep-alive" });
  // The consumer holds the line far longer than the limit: no timer runs meanwhile.
  mock.timers.tick(10_000);
  assert.equal(expired(scope), undefined);

  next = reader.next();
  await reading();
  mock.timers.tick(90); // 190 ms since the first read started, but never 100 ms of silence
  push("data: x\n");
  assert.deepEqual(await next, { done: false, value: "data: x" });
  assert.equal(expired(scope), undefined);

  next = reader.next();
  await reading();
  mock.timers.tick(99);
  assert.equal(expired(scope), undefined, "1 ms short of the limit");
  mock.timers.tick(1);
  const timeout = expired(scope);
  assert.equal(timeout?.kind, "timeout");
  assert.equal(timeout?.message, "the stream was silent for 100 ms");
  end();
  assert.deepEqual(await next, { done: true, value: undefined });
});

test("an idle limit of 0 or less, or not finite, never fires", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  for (const idleMs of [0, -1, Number.POSITIVE_INFINITY, Number.NaN]) {
    const { stream, reading, push, end } = manualBody();
    const scope = new CallScope(undefined);
    const reader = readLines(stream, scope, idleMs, () => "idle")[Symbol.asyncIterator]();
    const next = reader.next();
    await reading();
    mock.timers.tick(1_000_000);
    assert.equal(expired(scope), undefined, String(idleMs));
    push("x\n");
    end();
    assert.deepEqual(await next, { done: false, value: "x" });
  }
});
