// Reading streams a piece at a time, for the cancel and resumable-stream tests: take frames as they
// come, stop at a chosen point (the client "drops" the connection), and parse SSE frames with ids.

/** One SSE frame: its `id:` (when it has one) and its data (`[DONE]` or an event). */
export interface SseFrame {
  readonly id: number | undefined;
  readonly data: string;
}

/** Parse SSE frames (comments skipped); an `id:` line is kept as a number. */
export function parseSseFrames(text: string): SseFrame[] {
  const frames: SseFrame[] = [];
  for (const block of text.split("\n\n")) {
    if (!block.trim() || block.startsWith(":")) continue;
    let id: number | undefined;
    let data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("id: ")) id = Number(line.slice(4));
      else if (line.startsWith("data: ")) data = line.slice(6);
      else throw new Error(`unexpected SSE line ${JSON.stringify(line)}`);
    }
    frames.push({ id, data });
  }
  return frames;
}

/** The events of frames (everything but `[DONE]`), parsed. */
export const eventsOf = (frames: readonly SseFrame[]) =>
  frames.filter((frame) => frame.data !== "[DONE]").map((frame) => JSON.parse(frame.data) as Record<string, unknown>);

/**
 * Read a streamed response until `enough` holds for the text so far, then drop the connection
 * (abort the fetch). Returns the text read.
 */
export async function readUntil(response: Response, abort: AbortController, enough: (text: string) => boolean): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    while (!enough(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    abort.abort();
    await reader.cancel().catch(() => {});
  }
  return text;
}
