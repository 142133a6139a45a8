// The README's "An agent in this clone": its code block is examples/my-agents.ts, and its command (run here
// as bin/agenthost, which `npm start` runs after building) serves one conversation across two
// workers without losing a turn.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { closePinned, pinnedConnections, request, ROOT, startCluster } from "./cluster-helper.ts";

const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
const section = readme.slice(readme.indexOf("### An agent in this clone"), readme.indexOf("\n## ", readme.indexOf("### An agent in this clone") + 5));
const dir = mkdtempSync(path.join(os.tmpdir(), "agenthost-readme-agent-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The `NAME=value` assignments before `npm start` in the section's sh block (single quotes as the shell reads them). */
function commandEnvironment(): Record<string, string> {
  const command = /```sh\n(.*npm start)\n```/.exec(section)?.[1];
  assert.ok(command, "the section has an sh block ending in npm start");
  const env: Record<string, string> = {};
  for (const [, name, quoted, bare] of command.matchAll(/([A-Z_]+)=(?:'([^']*)'|(\S+))/g)) env[name!] = quoted ?? bare!;
  return env;
}

test("the README's agent code is examples/my-agents.ts", () => {
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  assert.equal(code, readFileSync(path.join(ROOT, "examples/my-agents.ts"), "utf8"));
});

test("the README's agent command: two workers, SQLite, four turns of one conversation in order", { timeout: 120_000 }, async () => {
  const env = commandEnvironment();
  assert.equal(env.WEB_CONCURRENCY, "2");
  assert.equal(env.MEMORY_BACKEND, "filedb");
  // A file of its own instead of data/agenthost.sqlite, so the test leaves the checkout alone.
  const cluster = await startCluster({ ...env, FILEDB_DB_PATH: path.join(dir, "agenthost.sqlite") });
  const auth = { authorization: `Bearer ${env.AUTH_SECRET!}` };
  try {
    const [first, second] = await pinnedConnections(cluster);
    const turns = ["one", "two", "three", "four"];
    for (const [i, message] of turns.entries()) {
      // Alternate between the two workers: each turn must see the ones the other worker stored.
      const via = (i % 2 === 0 ? first : second)![0]!.agent;
      const reply = await request(cluster.url, "POST", "/invoke", { input: { message }, thread_id: "demo" }, auth, via);
      assert.equal(reply.status, 200, reply.body);
      assert.equal(reply.json().content, `${i + 1}: ${message}`);
    }
    closePinned([first!, second!]);
    const history = await request(cluster.url, "GET", "/echo/history?thread_id=demo", undefined, auth);
    assert.equal(history.json<{ total: number }>().total, 8);
  } finally {
    await cluster.stop();
  }
});
