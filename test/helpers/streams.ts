/** Parsed frames of an SSE body: JSON events, whether `[DONE]` came last, and comment lines. */
export interface SseResult {
  events: Array<Record<string, unknown>>;
  done: boolean;
  comments: string[];
}

export function parseSse(text: string): SseResult {
  const result: SseResult = { events: [], done: false, comments: [] };
  for (const frame of text.split("\n\n")) {
    if (!frame.trim()) continue;
    if (frame.startsWith(":")) {
      result.comments.push(frame);
      continue;
    }
    if (result.done) throw new Error(`frame after [DONE]: ${frame}`);
    if (!frame.startsWith("data: ")) throw new Error(`not an SSE data frame: ${JSON.stringify(frame)}`);
    const data = frame.slice("data: ".length);
    if (data === "[DONE]") result.done = true;
    else result.events.push(JSON.parse(data) as Record<string, unknown>);
  }
  return result;
}

export function parseJsonl(text: string): Array<Record<string, unknown>> {
  if (text && !text.endsWith("\n")) throw new Error("JSON Lines body does not end with a newline");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
