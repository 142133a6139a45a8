import { test } from "node:test";
import assert from "node:assert/strict";
import type { ConversationLock, LockOutcome } from "../../src/coordination/locks/conversation-lock.ts";
import type { RegisteredAgent } from "../../src/agents/agent.ts";
import type { Principal } from "../../src/auth/principal.ts";
import { storageKey } from "../../src/auth/storage-key.ts";
import { ConversationService } from "../../src/conversations/conversation-service.ts";
import { ServiceError } from "../../src/errors/service-error.ts";
import { RunTracker } from "../../src/runs/run-tracker.ts";

const agent = (name: string) => ({ name, description: "", graph: {} as RegisteredAgent["graph"], supportsModelSelection: false }) satisfies RegisteredAgent;
const agents = new Map([["a", agent("a")], ["b", agent("b")]]);
const registry = { agents, defaultAgent: "a", get: (name: string) => agents.get(name) };
const trusted: Principal = { kind: "shared-secret", boundUserId: undefined, needsFeedbackProof: false };
const ann: Principal = { kind: "user-token", boundUserId: "ann", needsFeedbackProof: true };

/** One holder per key, no queue: a second request for a held key is busy. Records what it was asked. */
class OneAtATime implements ConversationLock {
  readonly held = new Set<string>();
  async acquire(key: string): Promise<LockOutcome> {
    if (this.held.has(key)) return { ok: false, reason: "busy" };
    this.held.add(key);
    const lost = new AbortController().signal;
    return { ok: true, lease: { lost, waitedMs: 0, release: async () => void this.held.delete(key) } };
  }
  async ping(): Promise<void> {}
  async close(): Promise<void> {}
}

function service(locks: ConversationLock = new OneAtATime(), runs = new RunTracker(0)) {
  return new ConversationService({ registry, locks, runs, serviceUserId: "service" });
}

const refusedAs = (kind: string) => (error: unknown) => error instanceof ServiceError && error.kind === kind;

test("agent(): the named agent, the default one when unnamed, refused when unknown", () => {
  const conversations = service();
  assert.equal(conversations.agent("b").name, "b");
  assert.equal(conversations.agent(undefined).name, "a");
  assert.throws(() => conversations.agent("nope"), refusedAs("unknown_agent"));
});

test("resolve(): the storage key is computed from the effective user, agent and thread", () => {
  const conversations = service();
  const named = conversations.resolve(trusted, agent("b"), { thread_id: "t", user_id: "bob" });
  assert.deepEqual(
    { userId: named.userId, threadId: named.threadId, storageKey: named.storageKey, created: named.created },
    { userId: "bob", threadId: "t", storageKey: storageKey("bob", "b", "t"), created: false },
  );
  assert.equal(conversations.resolve(trusted, agent("a"), { thread_id: "t" }).userId, "service");
  const fresh = conversations.resolve(ann, agent("a"), {});
  assert.equal(fresh.created, true);
  assert.equal(fresh.storageKey, storageKey("ann", "a", fresh.threadId));
  assert.throws(() => conversations.resolve(ann, agent("a"), { thread_id: "t", user_id: "bob" }), refusedAs("forbidden_user"));
});

test("withConversation(): one request at a time, released however the work ends", async () => {
  const locks = new OneAtATime();
  const conversations = service(locks);
  const conversation = conversations.resolve(trusted, agent("a"), { thread_id: "t" });
  const run = new AbortController();
  const answer = await conversations.withConversation(conversation, run, async () => {
    await assert.rejects(conversations.withConversation(conversation, run, async () => "second"), refusedAs("conversation_busy"));
    return "first";
  });
  assert.equal(answer, "first");
  assert.equal(locks.held.size, 0);
  await assert.rejects(
    conversations.withConversation(conversation, run, async () => {
      throw new Error("work failed");
    }),
    /work failed/,
  );
  assert.equal(locks.held.size, 0, "released after a failure too");
});

test("a lock service that cannot answer is lock_unavailable; an abort while waiting reports its reason", async () => {
  const broken: ConversationLock = {
    acquire: () => Promise.reject(new Error("down")),
    ping: async () => {},
    close: async () => {},
  };
  const conversation = service(broken).resolve(trusted, agent("a"), { thread_id: "t" });
  await assert.rejects(service(broken).hold(conversation, new AbortController()), refusedAs("lock_unavailable"));
  const aborted: ConversationLock = { ...broken, acquire: async () => ({ ok: false, reason: "aborted" }) };
  await assert.rejects(service(aborted).hold(conversation, new AbortController()), refusedAs("run_failed"));
});

test("a conversation the request created runs under its lock too, watched like any run", async () => {
  const locks = new OneAtATime();
  const runs = new RunTracker(0);
  const conversations = service(locks, runs);
  const fresh = conversations.resolve(ann, agent("a"), {});
  const stop = new AbortController();
  const answer = await conversations.withConversation(fresh, stop, async (signal) => {
    // The conversation list shows a new thread once its input is stored (issue 29, item 2).
    assert.deepEqual([...locks.held], [fresh.storageKey], "a new thread is locked");
    assert.equal(signal, stop.signal);
    stop.abort();
    assert.equal(runs.stalledCount(), 1, "an aborted run that has not settled is seen");
    return "done";
  });
  assert.equal(answer, "done");
  assert.equal(runs.stalledCount(), 0, "settled");
  assert.equal(locks.held.size, 0, "released");

  const named = conversations.resolve(ann, agent("a"), { thread_id: fresh.threadId });
  await conversations.withConversation(named, new AbortController(), async () => {
    assert.deepEqual([...locks.held], [named.storageKey], "a named thread is locked");
  });
});

test("a held conversation is watched from the lock until its release, released once", async () => {
  const locks = new OneAtATime();
  const runs = new RunTracker(0);
  const conversations = service(locks, runs);
  const run = new AbortController();
  const held = await conversations.hold(conversations.resolve(trusted, agent("a"), { thread_id: "t" }), run);
  run.abort();
  assert.equal(runs.stalledCount(), 1);
  await Promise.all([held.release(), held.release()]);
  assert.equal(runs.stalledCount(), 0);
  assert.equal(locks.held.size, 0);
});

test("one signal per run: a lost lock aborts the run's own controller with the lock's reason", async () => {
  const lost = new AbortController();
  const losing: ConversationLock = {
    acquire: async () => ({ ok: true, lease: { lost: lost.signal, waitedMs: 0, release: async () => {} } }),
    ping: async () => {},
    close: async () => {},
  };
  const run = new AbortController();
  const held = await service(losing).hold(service(losing).resolve(trusted, agent("a"), { thread_id: "t" }), run);
  assert.equal(held.signal, run.signal);
  const reason = new Error("lease lost");
  lost.abort(reason);
  assert.equal(run.signal.reason, reason);
  await held.release();

  const later = new AbortController();
  const again = await service(losing).hold(service(losing).resolve(trusted, agent("a"), { thread_id: "t" }), later);
  assert.ok(later.signal.aborted, "a lease lost before it was handed over aborts the run at once");
  await again.release();
});
