/**
 * The in-process floor for bench/throughput.ts: runs of the floor graph (floor-graph.ts) driven by
 * `concurrency` loops inside this process, with sync durability. No HTTP, no agenthost layers.
 *
 * It stays up between measurements, so the bench can take them in short turns with the service:
 * each line `<ms>` on stdin runs the loops for that long and answers one JSON line on stdout (runs,
 * seconds, CPU ms); the end of stdin closes the graph and exits.
 *
 *   node --import tsx bench/throughput-floor.ts <memory|filedb|serverdb> <invoke|stream> <concurrency> [path or url]
 */
import readline from "node:readline";
import { openFloorGraph } from "./floor-graph.ts";

const [backend, route, concurrency, target] = process.argv.slice(2) as [string, string, string, string | undefined];
const MESSAGE = "Hello! Please answer briefly.";

const floor = await openFloorGraph(backend, target);

async function once(): Promise<void> {
  if (route === "invoke") {
    await floor.invoke(MESSAGE);
    return;
  }
  for await (const chunk of floor.stream(MESSAGE)) void chunk;
}

/** Drive the loops for `ms`: runs finished, seconds elapsed, CPU time used. */
async function measure(ms: number): Promise<{ runs: number; seconds: number; cpuMs: number }> {
  const startedAt = performance.now();
  const deadline = startedAt + ms;
  const cpuAtStart = process.cpuUsage();
  let runs = 0;
  await Promise.all(
    Array.from({ length: Number(concurrency) }, async () => {
      while (performance.now() < deadline) {
        await once();
        runs++;
      }
    }),
  );
  const cpu = process.cpuUsage(cpuAtStart);
  return { runs, seconds: (performance.now() - startedAt) / 1_000, cpuMs: (cpu.user + cpu.system) / 1_000 };
}

for await (const line of readline.createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  process.stdout.write(`${JSON.stringify(await measure(Number(line)))}\n`);
}
await floor.close();
