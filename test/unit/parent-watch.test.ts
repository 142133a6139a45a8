// The worker's watch of its parent: nothing while the parent stays the one it started under, one
// call when it changes, and no further checks after that (or after the watch is stopped).
import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import { watchParent } from "../../src/worker/parent-watch.ts";

// The watch's timer does not hold the process: the test does, while it waits on the watch.
let holder: NodeJS.Timeout | undefined;
beforeEach(() => {
  holder = setInterval(() => {}, 60_000);
});
afterEach(() => clearInterval(holder));

/** Five ticks of a 1 ms interval: a watch's timer of the same period still set would have fired among them (timers of one period fire in order). */
async function fiveTicks(): Promise<void> {
  let ticks = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (++ticks < 5) return;
      clearInterval(timer);
      resolve();
    }, 1);
  });
}

/** A parent pid that the test changes, and a promise for the n-th look at it. */
function fakeParent(pid: number) {
  let looks = 0;
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  return {
    set: (next: number) => (pid = next),
    get looks() {
      return looks;
    },
    read: () => {
      looks++;
      for (const each of waiting.filter((w) => w.n <= looks)) each.resolve();
      return pid;
    },
    looked: (n: number) => new Promise<void>((resolve) => (looks >= n ? resolve() : waiting.push({ n, resolve }))),
  };
}

test("a parent that stays is never reported; a new parent is reported once and the watch ends", async () => {
  const parent = fakeParent(4242);
  let reported = 0;
  let signalled!: () => void;
  const reportedOnce = new Promise<void>((resolve) => (signalled = resolve));
  watchParent(
    () => {
      reported++;
      signalled();
    },
    parent.read,
    1,
  );
  await parent.looked(4); // the first read, then three checks of the same parent
  assert.equal(reported, 0);
  parent.set(1);
  await reportedOnce;
  const looksAtReport = parent.looks;
  await fiveTicks();
  assert.equal(parent.looks, looksAtReport, "no looks after the report");
  assert.equal(reported, 1);
});

test("a stopped watch does not look again", async () => {
  const parent = fakeParent(7);
  const stop = watchParent(() => assert.fail("not reported"), parent.read, 1);
  await parent.looked(2);
  stop();
  const looks = parent.looks;
  parent.set(1);
  await fiveTicks();
  assert.equal(parent.looks, looks);
});
