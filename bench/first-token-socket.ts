/**
 * Time to the socket, measured where it happens: the service runs in this process (as the tests
 * start it: the fake model, the memory backend) with the agent of bench/first-token-agent.ts, and
 * `ServerResponse.prototype.write` is wrapped to note when each token event is handed to the
 * socket. Prints the median and p90 delay from the graph producing a token to that write, for the
 * first token of each stream and for every token, at c=1 and c=8. bench/first-token.ts measures
 * the same path plus the loopback and a client in another process.
 *
 *   npm run bench:first-token:socket
 */
import http from "node:http";
import { startService, TEST_TOKEN } from "../test/helpers/service.ts";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const requests = Number(args.requests ?? 300);
const TOKEN_FRAME = /"type":"token","content":"(\d+) "/;

const service = await startService({
  AGENT_PATHS: JSON.stringify(["./bench/first-token-agent.ts:clockedAgent"]),
  DEFAULT_AGENT: "clocked-agent",
  LOG_LEVEL: "warn",
});

/** Each response's token delays (µs), in write order; `streams` lists them per row. */
const delays = new WeakMap<http.ServerResponse, number[]>();
let streams: number[][] = [];
const write = http.ServerResponse.prototype.write;
http.ServerResponse.prototype.write = function (this: http.ServerResponse, chunk: unknown, ...rest: unknown[]) {
  const stamp = typeof chunk === "string" ? TOKEN_FRAME.exec(chunk) : null;
  if (stamp) {
    let list = delays.get(this);
    if (!list) {
      list = [];
      delays.set(this, list);
      streams.push(list);
    }
    list.push(Number(process.hrtime.bigint() - BigInt(stamp[1]!)) / 1_000);
  }
  return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
} as typeof write;

async function stream(): Promise<void> {
  const res = await fetch(`${service.url}/stream`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ input: { message: "Hello!" }, stream_tokens: true }),
  });
  await res.text();
}

const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!;
const ms = (us: number) => `${(us / 1_000).toFixed(2)} ms`;

console.log(`Time from a token's production in the graph to its write to the socket (${requests} streams per row, in process)\n`);
for (const concurrency of [0, 1, 8]) {
  streams = [];
  let left = concurrency === 0 ? 50 : requests; // row 0: warm-up, not printed
  await Promise.all(
    Array.from({ length: Math.max(1, concurrency) }, async () => {
      while (left-- > 0) await stream();
    }),
  );
  if (concurrency === 0) continue;
  const first = streams.map((list) => list[0]!);
  const all = streams.flat();
  console.log(
    `c=${concurrency}: first token median ${ms(quantile(first, 0.5))}, p90 ${ms(quantile(first, 0.9))}` +
      ` | every token median ${ms(quantile(all, 0.5))}, p90 ${ms(quantile(all, 0.9))}`,
  );
}
await service.close();
