// One call's scope in the client: linked to the caller's signal, one timer at a time, and the error
// each way of stopping is reported as; raceSignal's early rejection. Timers run on a mocked clock.
import assert from "node:assert/strict";
import { afterEach, mock, test } from "node:test";
import { CallScope, raceSignal } from "../../src/client/call-scope.ts";
import { AgentClientError } from "../../src/client/errors.ts";

afterEach(() => mock.timers.reset());

test("the caller's abort reaches the call's signal, before or after the scope is made", () => {
  const already = new AbortController();
  already.abort(new Error("before"));
  assert.equal((new CallScope(already.signal).signal.reason as Error).message, "before");

  const later = new AbortController();
  const scope = new CallScope(later.signal);
  assert.equal(scope.signal.aborted, false);
  later.abort(new Error("later"));
  assert.equal((scope.signal.reason as Error).message, "later");
  assert.throws(() => scope.throwIfCancelled(), { message: "later" });
});

test("after dispose the caller's abort no longer reaches the call", () => {
  const caller = new AbortController();
  const scope = new CallScope(caller.signal);
  scope.dispose();
  caller.abort();
  assert.equal(scope.signal.aborted, false);
});

test("one timer at a time: arm replaces the previous one, disarm stops it", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  const scope = new CallScope(undefined);
  scope.arm(100, () => "first");
  mock.timers.tick(60);
  scope.arm(100, () => "second");
  mock.timers.tick(60);
  assert.equal(scope.signal.aborted, false, "the first timer was replaced");
  scope.disarm();
  mock.timers.tick(1_000);
  assert.equal(scope.signal.aborted, false, "disarmed");
  scope.arm(100, () => "third");
  mock.timers.tick(100);
  assert.ok(scope.signal.aborted);
  const reason = scope.signal.reason as AgentClientError;
  assert.equal(reason.kind, "timeout");
  assert.equal(reason.message, "third");
});

test("translate: the caller's reason, else the timeout, else an AgentClientError as is, else a network error", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  const own = new AgentClientError("bad frame", { kind: "protocol" });

  const caller = new AbortController();
  const cancelled = new CallScope(caller.signal);
  cancelled.arm(10, () => "too slow");
  mock.timers.tick(10);
  caller.abort(new Error("user pressed stop"));
  assert.equal((cancelled.translate(own) as Error).message, "user pressed stop", "the caller's reason wins over a timeout");

  const noReason = new AbortController();
  const plain = new CallScope(noReason.signal);
  noReason.abort(undefined);
  assert.equal((plain.translate(own) as Error).name, "AbortError");

  const timedOut = new CallScope(undefined);
  timedOut.arm(10, () => "too slow");
  mock.timers.tick(10);
  const timeout = timedOut.translate(new Error("This operation was aborted"));
  assert.ok(timeout instanceof AgentClientError && timeout.kind === "timeout" && timeout.message === "too slow");

  const scope = new CallScope(undefined);
  assert.equal(scope.translate(own), own);
  const network = scope.translate(new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:9") }));
  assert.ok(network instanceof AgentClientError);
  assert.equal(network.kind, "network");
  assert.equal(network.message, "request to agenthost failed: fetch failed (connect ECONNREFUSED 127.0.0.1:9)");
  assert.equal((scope.translate("odd") as AgentClientError).message, "request to agenthost failed: odd");
});

test("raceSignal settles with the promise, or rejects as soon as the signal aborts", async () => {
  assert.equal(await raceSignal(Promise.resolve(1), undefined), 1);
  const controller = new AbortController();
  assert.equal(await raceSignal(Promise.resolve(2), controller.signal), 2);
  await assert.rejects(raceSignal(Promise.reject(new Error("own")), controller.signal), { message: "own" });

  const never = new Promise<never>(() => {});
  const raced = raceSignal(never, controller.signal);
  controller.abort(new Error("stop"));
  await assert.rejects(raced, { message: "stop" });

  await assert.rejects(raceSignal(Promise.resolve(3), controller.signal), { message: "stop" }, "already aborted");
});
