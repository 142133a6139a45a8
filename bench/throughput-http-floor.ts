/**
 * The floor behind HTTP for bench/throughput.ts: the floor graph (floor-graph.ts) behind the
 * thinnest server that can answer the service's run routes: node:http, the body read and parsed,
 * one run, the answer written (invoke: the final message as JSON; stream: one SSE event per token
 * and message, then `[DONE]`). Runs whose requests arrive in one turn of the event loop start
 * together (startTogether, as the service starts them), so their steps interleave as the
 * in-process floor's loops do. No authentication, admission, locks, validation, logs or metrics.
 * It is what any HTTP server running this library pays before doing anything of its own. Prints
 * `listening` on stdout when ready; stops on SIGTERM.
 *
 *   node --import tsx bench/throughput-http-floor.ts <memory|filedb|serverdb> <port> [path or url]
 */
import http from "node:http";
import { startTogether } from "../src/admission/start-together.ts";
import { openFloorGraph } from "./floor-graph.ts";

const [backend, port, target] = process.argv.slice(2) as [string, string, string | undefined];
const floor = await openFloorGraph(backend, target);

async function answer(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (req.method === "GET") {
    res.end("ready"); // the benchmark's readiness probe
    return;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const { input } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { input: { message: string } };
  await startTogether();
  if (req.url?.endsWith("/stream")) {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for await (const [mode, payload] of floor.stream(input.message)) {
      const event = mode === "messages" ? { type: "token", content: (payload as [{ content: unknown }])[0].content } : { type: "update", content: payload };
      res.write(`data: ${JSON.stringify(event)}\n\n`);
    }
    res.end("data: [DONE]\n\n");
    return;
  }
  const body = JSON.stringify({ type: "ai", content: await floor.invoke(input.message) });
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

const server = http.createServer((req, res) => {
  answer(req, res).catch(() => {
    res.statusCode = 500;
    res.end();
  });
});
server.listen(Number(port), "127.0.0.1", () => process.stdout.write("listening\n"));
process.once("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  void floor.close().then(() => process.exit(0));
});
