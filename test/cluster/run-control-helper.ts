// Helpers of the cross-worker and cross-host cancel and resume tests: a steps-agent run that waits
// until cancelled, the conversation's messages, and a resumable stream read until its first event and
// then cut by a TCP proxy.
import http from "node:http";
import { TcpProxy } from "../helpers/tcp-proxy.ts";
import { parseSseFrames, type SseFrame } from "../helpers/run-streams.ts";
import { request, TOKEN, type Cluster } from "./cluster-helper.ts";

export const STEPS_AGENT = "./test/fixtures/run-control-agents.ts:stepsAgent";

/** The messages of `thread` as text, read through `base` (any worker or host). */
export async function messagesOf(base: string, thread: string): Promise<string[]> {
  const reply = await request(base, "GET", `/steps-agent/history?thread_id=${thread}`);
  if (reply.status !== 200) return [];
  return reply.json<{ messages: Array<{ content: unknown }> }>().messages.map((message) => String(message.content));
}

export interface CutStream {
  readonly runId: string;
  readonly requestId: string;
  /** The frames the client got before the cut. */
  readonly frames: SseFrame[];
}

/**
 * Start a resumable SSE stream of `body` through a TCP proxy in front of `cluster`, read until the
 * first event arrives, then cut the connection at the proxy (the client's network dropped).
 */
export async function streamThenCut(cluster: Cluster, body: Record<string, unknown>, requestId: string): Promise<CutStream> {
  const proxy = new TcpProxy(Number(new URL(cluster.url).port));
  const port = await proxy.start();
  const payload = JSON.stringify({ ...body, stream_resumable: true, stream_tokens: false });
  try {
    return await new Promise<CutStream>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port,
          path: "/steps-agent/stream",
          method: "POST",
          agent: false,
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "x-request-id": requestId },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("error", () => {});
          res.on("data", (chunk: string) => {
            text += chunk;
            const frames = parseSseFrames(text.slice(0, text.lastIndexOf("\n\n") + 2));
            if (frames.length === 0) return;
            proxy.reset();
            resolve({ runId: String(res.headers["x-run-id"]), requestId, frames });
          });
        },
      );
      req.on("error", () => {});
      req.on("close", () => reject(new Error("the stream closed before its first event")));
      req.end(payload);
    });
  } finally {
    await proxy.stop();
  }
}
