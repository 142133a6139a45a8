import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storageKey } from "../../src/auth/storage-key.ts";
import { loadManifest, manifestConflicts, parseManifest } from "../../src/maintenance/manifest.ts";
import { MaintenanceRefusal } from "../../src/maintenance/refusal.ts";

function invalid(data: unknown, reason: RegExp) {
  assert.throws(
    () => parseManifest(data),
    (error: unknown) => error instanceof MaintenanceRefusal && error.exitCode === 2 && reason.test(error.message),
  );
}

test("destinations are the service's storage keys; thread_id defaults to old_thread_id", () => {
  const mappings = parseManifest([
    { old_thread_id: "t-1", user_id: "alice", agent_id: "chatbot-agent" },
    { old_thread_id: "t-2", user_id: "bob", agent_id: "deep-agent", thread_id: "renamed" },
  ]);
  assert.deepEqual(mappings, [
    { oldThreadId: "t-1", userId: "alice", agentId: "chatbot-agent", threadId: "t-1", newThreadId: storageKey("alice", "chatbot-agent", "t-1") },
    { oldThreadId: "t-2", userId: "bob", agentId: "deep-agent", threadId: "renamed", newThreadId: storageKey("bob", "deep-agent", "renamed") },
  ]);
});

test("the manifest is strict: unknown fields, empty strings, missing or mistyped fields refuse", () => {
  const ok = { old_thread_id: "t", user_id: "u", agent_id: "a" };
  invalid([{ ...ok, owner: "x", note: "y" }], /manifest\[0\] has unknown fields "owner", "note"/);
  invalid([{ ...ok, old_thread_id: "" }], /manifest\[0\]\.old_thread_id must not be empty/);
  invalid([{ ...ok, agent_id: "" }], /manifest\[0\]\.agent_id must not be empty/);
  invalid([{ ...ok, thread_id: "" }], /manifest\[0\]\.thread_id must not be empty/);
  invalid([ok, { old_thread_id: "t2", agent_id: "a" }], /manifest\[1\]\.user_id is required/);
  invalid([{ ...ok, user_id: 7 }], /manifest\[0\]\.user_id must be a string/);
  invalid([{ ...ok, thread_id: null }], /manifest\[0\]\.thread_id must be a string/);
  invalid(["t"], /manifest\[0\] must be an object/);
  invalid([], /manifest lists no mappings/);
  invalid({ old_thread_id: "t" }, /manifest must be a JSON list of mappings/);
  // Every problem, one line.
  invalid([{ ...ok, user_id: "" }, { ...ok, extra: 1 }], /manifest\[0\]\.user_id must not be empty; manifest\[1\] has unknown field "extra"/);
});

test("duplicate sources, duplicate destinations and source/destination overlap are conflicts", () => {
  const a = { old_thread_id: "t-1", user_id: "alice", agent_id: "x" };
  assert.deepEqual(manifestConflicts(parseManifest([a, { old_thread_id: "t-2", user_id: "alice", agent_id: "x" }])), []);
  assert.match(manifestConflicts(parseManifest([a, { ...a, user_id: "bob" }])).join(), /source "t-1" appears more than once \(manifest\[0\], manifest\[1\]\)/);
  assert.match(
    manifestConflicts(parseManifest([a, { old_thread_id: "t-2", user_id: "alice", agent_id: "x", thread_id: "t-1" }])).join(),
    /manifest\[0\], manifest\[1\] map to the same destination lat:v1:/,
  );
  const key = storageKey("alice", "x", "t-1");
  assert.match(
    manifestConflicts(parseManifest([a, { old_thread_id: key, user_id: "carol", agent_id: "x" }])).join(),
    /is both a source \(manifest\[1\]\) and a destination \(manifest\[0\]\)/,
  );
});

test("an unreadable or malformed manifest file refuses with its path", async () => {
  const dir = mkdtempSync(join(tmpdir(), "agenthost-manifest-"));
  try {
    await assert.rejects(loadManifest(join(dir, "missing.json")), /cannot read manifest ".*missing\.json": ENOENT/);
    writeFileSync(join(dir, "bad.json"), "[{");
    await assert.rejects(loadManifest(join(dir, "bad.json")), /manifest ".*bad\.json" is not valid JSON/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
