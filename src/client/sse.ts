import { AgentClientError } from "./errors.ts";

/** The data of one SSE event (with its `id:` when it had one), or the end marker. */
export type SseData = { done: false; data: string; id?: string } | { done: true };

/** An SSE stream that ended before `[DONE]`: the connection was cut (a resumable stream may pick up again). */
export class StreamEndedEarly extends AgentClientError {}

/**
 * Decode Server-Sent Events from text lines: `data:` lines accumulate (joined by newlines), a blank
 * line dispatches, comment lines (`: keep-alive`) and other fields are ignored. `[DONE]` ends the
 * stream; the body is not read further. Ending without `[DONE]` is an error, because only `[DONE]`
 * says the run finished.
 */
export async function* decodeSse(lines: AsyncIterable<string>): AsyncGenerator<SseData, void, undefined> {
  let data: string[] = [];
  let id: string | undefined;
  for await (const line of lines) {
    if (line === "") {
      if (data.length === 0) {
        id = undefined;
        continue;
      }
      const payload = data.join("\n");
      data = [];
      if (payload === "[DONE]") {
        yield { done: true };
        return;
      }
      yield id === undefined ? { done: false, data: payload } : { done: false, data: payload, id };
      id = undefined;
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    if (field !== "data" && field !== "id") continue;
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "id") id = value;
    else data.push(value);
  }
  // A last `data: [DONE]` without its blank line still counts; anything else is a cut-off stream.
  if (data.length === 1 && data[0] === "[DONE]") {
    yield { done: true };
    return;
  }
  const where = data.length > 0 ? "in the middle of a frame" : "before [DONE]";
  throw new StreamEndedEarly(`the SSE stream ended ${where}; the run may not have finished`, { kind: "protocol" });
}
