// Issue 36, a background run's first event: a worker keeps a copy of the runs it executes beside the
// shared log (the primary's or Redis), and a reader in that worker follows the copy; whatever the
// copy cannot give (let go, dropped by the worker's own bounds, the run taken over) comes from the
// shared log, from the entry after the reader's last.
import { test } from "node:test";
import assert from "node:assert/strict";
import { setImmediate as turn } from "node:timers/promises";
import type { EventLog, LogEntry, LogReader } from "../../src/coordination/run-events/event-log.ts";
import { MemoryEventLog } from "../../src/coordination/run-events/memory-event-log.ts";
import { MirroredEventLog } from "../../src/coordination/run-events/mirrored-event-log.ts";

const KEY = "lat:v1:conversation";
const BOUNDS = { ttlMs: 60_000, maxAgeMs: 60_000, maxRunBytes: 1e9, maxUserBytes: 1e9, maxTotalBytes: 1e9 };
const token = (content: string) => ({ type: "token", content });

/** The shared log (a MemoryEventLog, as the primary keeps it), counting the reads that reach it. */
class SharedLog extends MemoryEventLog {
  reads = 0;
  override read(...args: Parameters<EventLog["read"]>): Promise<LogReader | undefined> {
    this.reads++;
    return super.read(...args);
  }
}

function logs(local: Partial<typeof BOUNDS> = {}) {
  const shared = new SharedLog(BOUNDS);
  const here = new MemoryEventLog({ ...BOUNDS, ...local });
  return { shared, here, log: new MirroredEventLog(shared, here) };
}

async function all(reader: LogReader | undefined): Promise<LogEntry[]> {
  assert.ok(reader, "the run is known");
  const entries: LogEntry[] = [];
  for await (const entry of reader) entries.push(entry);
  return entries;
}

const signal = () => new AbortController().signal;

test("a reader in the executing process follows the copy, live to the end, without reading the shared log", async () => {
  const { shared, log } = logs();
  const writer = log.open("run-1", KEY, "ann");
  writer.append(token("a"));
  const following = all(await log.read("run-1", KEY, 0, signal()));
  writer.append(token("b"));
  writer.end(true);
  const expected = [{ seq: 1, event: token("a") }, { seq: 2, event: token("b") }, { seq: 3, end: true, clean: true }];
  assert.deepEqual(await following, expected);
  assert.deepEqual(await all(await log.read("run-1", KEY, 1, signal())), expected.slice(1), "from a position too");
  assert.equal(shared.reads, 0);
  assert.deepEqual(await all(await shared.read("run-1", KEY, 0, signal())), expected, "the shared log has the same record");
  assert.equal(await log.read("run-1", "lat:v1:another", 0, signal()), undefined, "another conversation's reader finds nothing");
});

test("once the copy is let go, and for a run executed elsewhere, the shared log answers", async () => {
  const { shared, here, log } = logs({ ttlMs: 0 });
  const writer = log.open("run-1", KEY, "ann");
  writer.append(token("a"));
  writer.end(true);
  while (here.size > 0) await turn();
  assert.equal((await all(await log.read("run-1", KEY, 0, signal()))).length, 2);
  assert.equal(shared.reads, 1);
  const elsewhere = shared.open("run-2", KEY, "ann");
  elsewhere.append(token("x"));
  elsewhere.end(false);
  assert.deepEqual(await all(await log.read("run-2", KEY, 0, signal())), [{ seq: 1, event: token("x") }, { seq: 2, end: true, clean: false }]);
  assert.equal(await log.read("run-3", KEY, 0, signal()), undefined, "an unknown run is unknown");
});

test("a run taken over: its reader here goes on from the shared log after the last entry it got", async () => {
  const { shared, log } = logs();
  const writer = log.open("run-1", KEY, "ann");
  writer.append(token("a"));
  writer.append(token("b"));
  const reader = (await log.read("run-1", KEY, 0, signal()))![Symbol.asyncIterator]();
  assert.deepEqual((await reader.next()).value, { seq: 1, event: token("a") });
  assert.deepEqual((await reader.next()).value, { seq: 2, event: token("b") });
  // Another worker's attempt starts the shared record over, and this one lets its copy go.
  const next = shared.open("run-1", KEY, "ann");
  for (const content of ["A", "B", "C"]) next.append(token(content));
  next.end(true);
  writer.abandon();
  const rest: LogEntry[] = [];
  for (let step = await reader.next(); !step.done; step = await reader.next()) rest.push(step.value);
  assert.deepEqual(rest, [{ seq: 3, event: token("C") }, { seq: 4, end: true, clean: true }]);
  assert.equal(shared.reads, 1);
});

test("a copy dropped by this process's own bounds does not drop the run for its reader: the shared log still has it", async () => {
  const size = JSON.stringify({ seq: 1, event: token("x".repeat(100)) }).length;
  const { shared, log } = logs({ maxRunBytes: 2 * size });
  const writer = log.open("run-1", KEY, "ann");
  writer.append(token("x".repeat(100)));
  const following = all(await log.read("run-1", KEY, 0, signal()));
  for (let i = 0; i < 4; i++) writer.append(token("x".repeat(100)));
  writer.end(true);
  const entries = await following;
  assert.deepEqual(
    entries.map((entry) => ("seq" in entry ? entry.seq : "dropped")),
    [1, 2, 3, 4, 5, 6],
    "every entry once, in order, and the end",
  );
  assert.equal(shared.reads, 1, "the rest came from the shared log");
});

test("a reader that stops here does not go on to the shared log", async () => {
  const { shared, log } = logs();
  const writer = log.open("run-1", KEY, "ann");
  writer.append(token("a"));
  const stop = new AbortController();
  const following = all(await log.read("run-1", KEY, 0, stop.signal));
  await turn();
  stop.abort();
  assert.deepEqual(await following, [{ seq: 1, event: token("a") }]);
  assert.equal(shared.reads, 0);
});

test("an event is serialized once to be measured for both records, however large the state it carries", async () => {
  const { shared, here, log } = logs();
  let serialized = 0;
  const state = { messages: Array.from({ length: 1_000 }, (_, i) => ({ type: "human", content: `message ${i}` })) };
  const event = { event: "values", data: state, toJSON: () => (serialized++, { event: "values", data: state }) };
  const writer = log.open("run-1", KEY, "ann");
  writer.append(event);
  assert.equal(serialized, 1);
  assert.ok(here.bytes > JSON.stringify(state).length && here.bytes === shared.bytes, "both records count the same bytes");
});

test("a run the shared log cannot record is not kept here either", async () => {
  const here = new MemoryEventLog(BOUNDS);
  const broken: EventLog = {
    open: () => {
      throw new Error("the primary is gone");
    },
    read: async () => undefined,
    close: async () => undefined,
  };
  const log = new MirroredEventLog(broken, here);
  assert.throws(() => log.open("run-1", KEY, "ann"), /the primary is gone/);
  assert.equal(here.size, 0);
});
