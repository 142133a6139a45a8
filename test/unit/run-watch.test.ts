// The in-process watch a join waits on: a change written here wakes it at once, its timer wakes it
// otherwise, its request's abort rejects it, and a cancelled wait is dropped.
import assert from "node:assert/strict";
import { test } from "node:test";
import { RunWatch } from "../../src/platform/run-watch.ts";

const HOUR = 3_600_000;

test("a change of the run wakes every wait on it, and only on it", async () => {
  const watch = new RunWatch();
  const control = new AbortController();
  const woken: string[] = [];
  const a = watch.next("run-a", HOUR, control.signal);
  const b = watch.next("run-a", HOUR, control.signal);
  const other = watch.next("run-b", HOUR, control.signal);
  void a.done.then(() => woken.push("a"));
  void b.done.then(() => woken.push("b"));
  void other.done.then(() => woken.push("other"));
  watch.changed("run-a");
  await Promise.all([a.done, b.done]);
  assert.deepEqual(woken.sort(), ["a", "b"]);
  other.cancel();
});

test("a wait learns the status the writer names (then its reader need not read the record); undefined when none is named", async () => {
  const watch = new RunWatch();
  const signal = new AbortController().signal;
  const named = watch.next("run", HOUR, signal);
  watch.changed("run", "running");
  assert.equal(await named.done, "running");
  const unnamed = watch.next("run", HOUR, signal);
  watch.changed("run");
  assert.equal(await unnamed.done, undefined);
});

test("a change made before the wait is awaited still ends it (it is registered when asked for)", async () => {
  const watch = new RunWatch();
  const wait = watch.next("run", HOUR, new AbortController().signal);
  watch.changed("run");
  await wait.done;
});

test("with no change here, the timer ends the wait, with no status", async () => {
  const watch = new RunWatch();
  assert.equal(await watch.next("run", 1, new AbortController().signal).done, undefined);
});

test("the request's abort rejects the wait with its reason; an already aborted signal at once", async () => {
  const watch = new RunWatch();
  const control = new AbortController();
  const wait = watch.next("run", HOUR, control.signal);
  const reason = new Error("deadline");
  control.abort(reason);
  await assert.rejects(wait.done, (error) => error === reason);
  await assert.rejects(watch.next("run", HOUR, control.signal).done, (error) => error === reason);
});

test("a cancelled wait is dropped: a later change or abort does not settle it, and a new wait still works", async () => {
  const watch = new RunWatch();
  const control = new AbortController();
  const wait = watch.next("run", HOUR, control.signal);
  let settled = false;
  wait.done.then(
    () => (settled = true),
    () => (settled = true),
  );
  wait.cancel();
  watch.changed("run");
  control.abort(new Error("late"));
  const again = watch.next("run", HOUR, new AbortController().signal);
  watch.changed("run");
  await again.done;
  assert.equal(settled, false);
});
