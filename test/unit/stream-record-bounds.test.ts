// Issue 29 items 3 and 8, the record itself: resumable runs' records are bounded per run, per user
// and in total (src/runs/stream-log/record-budget.ts), past a bound a record is dropped and its
// readers get DROPPED; one user cannot push out another user's records unless that user holds more;
// a read from at or past an ended run's end gets the end at once.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { StreamEvent } from "../../src/contract/messages.ts";
import type { LogEntry, LogReader } from "../../src/coordination/run-events/event-log.ts";
import { MemoryEventLog } from "../../src/coordination/run-events/memory-event-log.ts";
import { entryBytes, RecordBudget } from "../../src/coordination/run-events/record-budget.ts";

const KEY = "lat:v1:conversation";
const token = (size: number): StreamEvent => ({ type: "token", content: "x".repeat(size) });
/** The bytes one token event of `size` characters counts for. */
const cost = (size: number) => entryBytes(JSON.stringify(token(size)).length);

function log(bounds: { maxRunBytes?: number; maxUserBytes?: number; maxTotalBytes?: number } = {}) {
  return new MemoryEventLog({ ttlMs: 60_000, maxAgeMs: 60_000, maxRunBytes: 1e9, maxUserBytes: 1e9, maxTotalBytes: 1e9, ...bounds });
}

/** Every entry a reader gets (it must end by itself). */
async function all(reader: LogReader | undefined): Promise<LogEntry[]> {
  assert.ok(reader, "the run is known");
  const entries: LogEntry[] = [];
  for await (const entry of reader) entries.push(entry);
  return entries;
}

const read = (events: MemoryEventLog, runId: string, after = 0) => events.read(runId, KEY, after, new AbortController().signal);

test("a run past its own bound is dropped: readers get DROPPED, its bytes are free, the others are kept", async () => {
  const events = log({ maxRunBytes: 3 * cost(1000) });
  const small = events.open("small", KEY, "ann");
  small.append(token(1000));
  small.end(true);
  const big = events.open("big", KEY, "ann");
  big.append(token(1000));
  big.append(token(1000));
  // A reader following the run live when it is dropped.
  const following = all(await read(events, "big", 2));
  big.append(token(1000));
  assert.equal(events.bytes, 4 * cost(1000) + entryBytes(0), "three events of big and small's event and end");
  big.append(token(1000));
  assert.equal(events.bytes, cost(1000) + entryBytes(0), "big's bytes are free");
  big.append(token(10));
  big.end(true);
  assert.deepEqual(await following, [{ dropped: true }]);
  assert.deepEqual(await all(await read(events, "big")), [{ dropped: true }], "a new reader too, whatever its position");
  assert.deepEqual(await all(await read(events, "big", 99)), [{ dropped: true }]);
  assert.equal((await all(await read(events, "small"))).length, 2, "the other run is whole");
});

test("past a user's bound, that user's oldest ended record goes first; another user's are untouched", async () => {
  const end = entryBytes(0);
  const events = log({ maxUserBytes: 3 * cost(1000) + 2 * end });
  const bob = events.open("bob-1", KEY, "bob");
  bob.append(token(1000));
  const first = events.open("ann-1", KEY, "ann");
  first.append(token(1000));
  const running = events.open("ann-2", KEY, "ann");
  running.append(token(1000));
  first.end(true);
  const third = events.open("ann-3", KEY, "ann");
  third.append(token(1000));
  assert.equal(events.bytes, 4 * cost(1000) + end);
  third.append(token(1000));
  // Past her bound: of her records (ann-1 ended, ann-2 and ann-3 running) the ended one goes.
  assert.deepEqual(await all(await read(events, "ann-1")), [{ dropped: true }]);
  third.append(token(1000));
  // Then ann-2 and ann-3 both run: the oldest goes.
  assert.deepEqual(await all(await read(events, "ann-2")), [{ dropped: true }]);
  third.end(true);
  assert.equal((await all(await read(events, "ann-3"))).length, 4);
  bob.end(true);
  assert.equal((await all(await read(events, "bob-1"))).length, 2, "bob's run is whole");
  assert.equal(events.bytes, 4 * cost(1000) + 2 * end);
});

test("past the total, the user holding the most bytes loses a record: a flood of one user never reaches a lighter one", async () => {
  const events = log({ maxUserBytes: 4 * cost(1000), maxTotalBytes: 6 * cost(1000) });
  const bob = events.open("bob", KEY, "bob");
  bob.append(token(1000));
  bob.append(token(1000));
  bob.end(true);
  const carol = events.open("carol", KEY, "carol");
  carol.append(token(1000));
  carol.end(true);
  // Ann floods: 20 runs of one event each, every one ended.
  for (let i = 0; i < 20; i++) {
    const run = events.open(`ann-${i}`, KEY, "ann");
    run.append(token(1000));
    run.end(true);
  }
  assert.ok(events.bytes <= 6 * cost(1000));
  assert.equal((await all(await read(events, "bob"))).length, 3, "bob's run is whole");
  assert.equal((await all(await read(events, "carol"))).length, 2, "carol's run is whole");
  assert.equal((await all(await read(events, "ann-19"))).length, 2, "ann's newest run is kept");
  assert.deepEqual(await all(await read(events, "ann-0")), [{ dropped: true }], "her oldest made room");

  // Then a heavier user than the newcomer loses records, never the newcomer's own while it is lighter.
  const dave = events.open("dave", KEY, "dave");
  dave.append(token(1000));
  dave.end(true);
  assert.equal((await all(await read(events, "dave"))).length, 2);
  assert.equal((await all(await read(events, "bob"))).length, 3, "ann held more than bob: she gave the room");
  assert.deepEqual(await all(await read(events, "ann-18")), [{ dropped: true }]);
});

test("the budget's arithmetic: charges, drops and releases leave nothing counted", () => {
  const drops: string[] = [];
  const budget = new RecordBudget({ maxRunBytes: 100, maxUserBytes: 150, maxTotalBytes: 200 });
  const a = budget.open("ann", () => drops.push("a"));
  const b = budget.open("ann", () => drops.push("b"));
  const c = budget.open("bob", () => drops.push("c"));
  assert.equal(budget.charge(a, 90), true);
  assert.equal(budget.charge(a, 20), false, "a passes its run's bound");
  assert.deepEqual(drops, ["a"]);
  assert.equal(budget.charge(a, 1), false, "a dropped record keeps nothing more");
  assert.equal(budget.charge(b, 100), true);
  assert.equal(budget.charge(c, 100), true);
  assert.equal(budget.bytes, 200);
  assert.equal(budget.charge(c, 1), false, "past the total, bob holds as much as ann: his own record goes");
  assert.deepEqual(drops, ["a", "c"]);
  assert.equal(budget.bytesOf("ann"), 100);
  budget.release(b);
  budget.release(b);
  assert.equal(budget.bytes, 0);
  assert.equal(budget.bytesOf("ann"), 0);
});

test("a read from at or past an ended run's last event gets its end at once", async () => {
  const events = log();
  const run = events.open("done", KEY, "ann");
  run.append(token(1));
  run.append(token(2));
  run.end(true);
  assert.deepEqual(await all(await read(events, "done", 2)), [{ seq: 3, end: true, clean: true }]);
  assert.deepEqual(await all(await read(events, "done", 3)), [{ seq: 3, end: true, clean: true }]);
  assert.deepEqual(await all(await read(events, "done", 50)), [{ seq: 3, end: true, clean: true }]);

  // A reader past what a running run has made waits for its end, and gets it.
  const live = events.open("live", KEY, "ann");
  live.append(token(1));
  const waiting = all(await read(events, "live", 5));
  live.append(token(1));
  live.end(false);
  assert.deepEqual(await waiting, [{ seq: 3, end: true, clean: false }]);
});
