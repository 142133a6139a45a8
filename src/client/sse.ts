import { AgentClientError } from "./errors.ts";

/** The data of one SSE event, or the end marker. */
export type SseData = { done: false; data: string } | { done: true };

/**
 * Decode Server-Sent Events from text lines: `data:` lines accumulate (joined by newlines), a blank
 * line dispatches, comment lines (`: keep-alive`) and other fields are ignored. `[DONE]` ends the
 * stream; the body is not read further. Ending without `[DONE]` is an error, because only `[DONE]`
 * says the run finished.
 */
export async function* decodeSse(lines: AsyncIterable<string>): AsyncGenerator<SseData, void, undefined> {
  let data: string[] = [];
  for await (const line of lines) {
    if (line === "") {
      if (data.length === 0) continue;
      const payload = data.join("\n");
      data = [];
      if (payload === "[DONE]") {
        yield { done: true };
        return;
      }
      yield { done: false, data: payload };
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    if (field !== "data") continue;
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    data.push(value);
  }
  // A last `data: [DONE]` without its blank line still counts; anything else is a cut-off stream.
  if (data.length === 1 && data[0] === "[DONE]") {
    yield { done: true };
    return;
  }
  const where = data.length > 0 ? "in the middle of a frame" : "before [DONE]";
  throw new AgentClientError(`the SSE stream ended ${where}; the run may not have finished`, { kind: "protocol" });
}
