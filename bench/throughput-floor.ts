/**
 * The in-process floor for bench/throughput.ts: runs of the floor graph (floor-graph.ts) driven by
 * `concurrency` loops inside this process, with sync durability. No HTTP, no agenthost layers.
 * Prints one JSON line: runs and CPU time.
 *
 *   node --import tsx bench/throughput-floor.ts <memory|filedb|serverdb> <invoke|stream> <warm-up ms> <seconds> <concurrency> [path or url]
 */
import { openFloorGraph } from "./floor-graph.ts";

const [backend, route, warmupMs, seconds, concurrency, target] = process.argv.slice(2) as [string, string, string, string, string, string | undefined];
const MESSAGE = "Hello! Please answer briefly.";

const floor = await openFloorGraph(backend, target);

async function once(): Promise<void> {
  if (route === "invoke") {
    await floor.invoke(MESSAGE);
    return;
  }
  for await (const chunk of floor.stream(MESSAGE)) void chunk;
}

// Runs may finish without ever yielding to the timer phase, so the loops themselves start the measurement.
const warmEnd = performance.now() + Number(warmupMs);
const deadline = warmEnd + Number(seconds) * 1_000;
let measuring = false;
let runs = 0;
let cpuAtStart = process.cpuUsage();
let startedAt = 0;

await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (performance.now() < deadline) {
      await once();
      runs++;
      if (!measuring && performance.now() >= warmEnd) {
        measuring = true;
        runs = 0;
        cpuAtStart = process.cpuUsage();
        startedAt = performance.now();
      }
    }
  }),
);
const cpu = process.cpuUsage(cpuAtStart);
const elapsed = (performance.now() - startedAt) / 1_000;
await floor.close();
if (!measuring) throw new Error("the measurement never started");
process.stdout.write(`${JSON.stringify({ runs, seconds: elapsed, cpuMs: (cpu.user + cpu.system) / 1_000 })}\n`);
