/**
 * Time to the socket: how long a streamed token takes from the moment the graph produces it to the
 * moment it reaches a client on the same machine. The service (bin/agenthost, one worker) runs an
 * agent whose tokens are their own production times (bench/first-token-agent.ts, on the monotonic
 * clock all processes share); this client reads each token event as it arrives and subtracts. The
 * figure includes loopback delivery and this client's parsing, so it bounds the service's own part
 * from above. With two cores the service runs on core 0 and this client on core 1.
 *
 *   npm run bench:first-token
 *   npm run bench:first-token -- --requests=400 --concurrency=1,8
 */
import http from "node:http";
import path from "node:path";
import { pinLoadGenerator, pinned, startService, TOKEN } from "./load-service.ts";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const requests = Number(args.requests ?? 300);
const concurrencies = (args.concurrency ?? "1,8").split(",").map(Number);
const root = path.resolve(import.meta.dirname, "..");
pinLoadGenerator();

const service = await startService(root, {
  MEMORY_BACKEND: "memory",
  AGENT_PATHS: JSON.stringify(["./bench/first-token-agent.ts:clockedAgent"]),
  DEFAULT_AGENT: "clocked-agent",
});
const { port } = service;

/** One stream; the delay of each token event (µs), the first one first. */
function stream(agent: http.Agent): Promise<number[]> {
  const body = JSON.stringify({ input: { message: "Hello!" }, stream_tokens: true });
  return new Promise((resolve, reject) => {
    const delays: number[] = [];
    let pending = "";
    const req = http.request(
      {
        agent,
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/stream",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          const arrived = process.hrtime.bigint();
          pending += chunk;
          const events = pending.split("\n\n");
          pending = events.pop()!;
          for (const event of events) {
            if (!event.startsWith("data: {")) continue;
            const parsed = JSON.parse(event.slice(6)) as { type: string; content: unknown };
            if (parsed.type === "token") delays.push(Number(arrived - BigInt(String(parsed.content).trim())) / 1_000);
          }
        });
        res.on("end", () => resolve(delays));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!;
const ms = (us: number) => `${(us / 1_000).toFixed(2)} ms`;

try {
  console.log(`Time from a token's production in the graph to its arrival at a client over loopback (${requests} streams per row, one worker${pinned ? "; service on core 0, client on core 1" : ""})\n`);
  for (const concurrency of [0, ...concurrencies]) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(1, concurrency) });
    const first: number[] = [];
    const all: number[] = [];
    let left = concurrency === 0 ? 100 : requests; // row 0: warm-up, not printed
    await Promise.all(
      Array.from({ length: Math.max(1, concurrency) }, async () => {
        while (left-- > 0) {
          const delays = await stream(agent);
          first.push(delays[0]!);
          all.push(...delays);
        }
      }),
    );
    agent.destroy();
    if (concurrency === 0) continue;
    console.log(
      `c=${concurrency}: first token median ${ms(quantile(first, 0.5))}, p95 ${ms(quantile(first, 0.95))}, max ${ms(quantile(first, 1))}` +
        ` | every token median ${ms(quantile(all, 0.5))}, p95 ${ms(quantile(all, 0.95))}`,
    );
  }
} finally {
  await service.stop();
}
