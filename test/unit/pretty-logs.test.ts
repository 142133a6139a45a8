// scripts/pretty-logs.mjs, the log formatter of `npm run dev`.
import assert from "node:assert/strict";
import { test } from "node:test";
// @ts-expect-error: a plain ES module script without declarations
import { prettyLine } from "../../scripts/pretty-logs.mjs";

const pretty = prettyLine as (line: string, color?: boolean) => string | undefined;

test("a JSON log line becomes time, level, process, message and fields", () => {
  const line = JSON.stringify({ level: 30, time: Date.UTC(2026, 0, 2, 3, 4, 5, 6), pid: 1, worker: 2, host: "127.0.0.1", port: 8080, msg: "listening" });
  assert.equal(pretty(line), "03:04:05.006 INFO  worker 2  listening  host=127.0.0.1 port=8080");
  const primary = JSON.stringify({ level: 40, time: 0, role: "primary", msg: "x", reason: "two words" });
  assert.equal(pretty(primary), '00:00:00.000 WARN  primary   x  reason="two words"');
});

test("an error's stack goes below its line; lines that are not log lines are left alone", () => {
  const line = JSON.stringify({ level: 50, time: 0, msg: "failed", err: { type: "Error", message: "boom", stack: "Error: boom\n    at f (src/x.ts:1:1)" } });
  assert.equal(pretty(line), "00:00:00.000 ERROR worker    failed  err=boom\n    at f (src/x.ts:1:1)");
  assert.equal(pretty("agenthost cannot start: PORT 8080 is already in use"), undefined);
  assert.equal(pretty('{"not":"a log line"}'), undefined);
});
