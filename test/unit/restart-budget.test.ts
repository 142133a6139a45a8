// The supervisor's restart budget on a clock the test moves by hand: the backoff of each restart in
// the window, the crash loop past the limit, and restarts leaving the window.
import assert from "node:assert/strict";
import { test } from "node:test";
import { RestartBudget } from "../../src/cluster/restart-budget.ts";

function budget(limit: number, windowMs: number) {
  const clock = { now: 1_000 };
  return { clock, budget: new RestartBudget(limit, windowMs, () => clock.now) };
}

test("the first restart in a window is immediate; later ones back off from 250 ms, doubling", () => {
  const { budget: b } = budget(10, 60_000);
  assert.deepEqual(
    Array.from({ length: 6 }, () => b.record()),
    [0, 250, 500, 1_000, 2_000, 4_000],
  );
});

test("the backoff stops growing at 10 s", () => {
  const { budget: b } = budget(100, 60_000);
  const delays = Array.from({ length: 12 }, () => b.record());
  assert.deepEqual(delays.slice(6), [8_000, 10_000, 10_000, 10_000, 10_000, 10_000]);
});

test("more than `limit` restarts within the window is a crash loop", () => {
  const { clock, budget: b } = budget(3, 10_000);
  assert.equal(b.record(), 0);
  clock.now += 1_000;
  assert.equal(b.record(), 250);
  clock.now += 1_000;
  assert.equal(b.record(), 500);
  clock.now += 1_000;
  assert.equal(b.record(), undefined, "the fourth restart in 10 s");
  clock.now += 1_000;
  assert.equal(b.record(), undefined, "still inside the window: the budget does not reset by itself");
});

test("restarts older than the window no longer count", () => {
  const { clock, budget: b } = budget(2, 10_000);
  assert.equal(b.record(), 0); // t = 0
  clock.now += 4_000;
  assert.equal(b.record(), 250); // t = 4 s, two in the window
  clock.now += 6_000;
  // t = 10 s: the first restart is exactly one window old and still counts, so this is the third.
  assert.equal(b.record(), undefined);
  clock.now += 1;
  // t = 10.001 s: the first has left; the window holds t = 4 s, 10 s and now.
  assert.equal(b.record(), undefined);
  clock.now += 10_000;
  // t = 20.001 s: only the 10.001 s restart and this one remain.
  assert.equal(b.record(), 250);
  clock.now += 60_000;
  assert.equal(b.record(), 0, "after a quiet window the backoff starts over");
});

test("a limit of 0 refuses every restart; a limit of 1 allows one per window", () => {
  const { budget: none } = budget(0, 1_000);
  assert.equal(none.record(), undefined);
  const { clock, budget: one } = budget(1, 1_000);
  assert.equal(one.record(), 0);
  assert.equal(one.record(), undefined);
  clock.now += 5_000;
  assert.equal(one.record(), 0);
});
