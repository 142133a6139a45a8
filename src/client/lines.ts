import type { CallScope } from "./call-scope.ts";

/**
 * Split a response body into text lines (LF, CRLF or lone CR), re-arming the scope's idle timer
 * before every read: any bytes, SSE comments included, count as activity. The last line is yielded
 * even without a line break. The body is cancelled when the consumer stops early.
 */
export async function* readLines(
  body: ReadableStream<Uint8Array>,
  scope: CallScope,
  idleMs: number,
  describeIdle: () => string,
): AsyncGenerator<string, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let finished = false;
  try {
    for (;;) {
      scope.arm(idleMs, describeIdle);
      const { done, value } = await reader.read();
      scope.disarm();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      yield* takeLines();
    }
    buffer += decoder.decode();
    yield* takeLines();
    finished = true;
    if (buffer.endsWith("\r")) buffer = buffer.slice(0, -1);
    if (buffer !== "") yield buffer;
  } finally {
    scope.disarm();
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }

  function* takeLines(): Generator<string> {
    for (;;) {
      const match = /\r\n|\n|\r/.exec(buffer);
      // A CR at the very end may be the first half of CRLF: wait for the next chunk.
      if (!match || (match[0] === "\r" && match.index === buffer.length - 1)) return;
      const line = buffer.slice(0, match.index);
      buffer = buffer.slice(match.index + match[0].length);
      yield line;
    }
  }
}
