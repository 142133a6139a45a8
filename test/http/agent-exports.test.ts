// An AGENT_PATHS entry naming an export its module does not have is refused with the exports it
// does have (agents and graphs first, each list bounded) and, for a likely typo, the name meant.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadAgentFromImportString } from "../../src/agents/loader.ts";
import { AgentRegistryError } from "../../src/agents/registry.ts";
import { startService } from "../helpers/service.ts";

let folder: string;

before(async () => {
  folder = await mkdtemp(path.join(tmpdir(), "agent-exports-"));
  await writeFile(
    path.join(folder, "my-agent.ts"),
    [
      'export const agent = { name: "mine", description: "An agent of my own", graphFactory: () => { throw new Error("not built in this test"); } };',
      "export function helper(text: string): string { return text.trim(); }",
      'export const VERSION = "1.0.0";',
      "",
    ].join("\n"),
  );
  await writeFile(path.join(folder, "many.mjs"), Array.from({ length: 30 }, (_, i) => `export const tool${String(i).padStart(2, "0")} = ${i};`).join("\n"));
  await writeFile(path.join(folder, "empty.mjs"), "export {};\n");
});

after(() => rm(folder, { recursive: true, force: true }));

/** Why loading `entry` (resolved from the test's folder) was refused. */
async function refusal(entry: string): Promise<string> {
  try {
    await loadAgentFromImportString(entry, folder);
  } catch (error) {
    return (error as Error).message;
  }
  assert.fail(`${entry} loaded`);
}

test("a misspelt export: the refusal names the export meant and lists what the module exports", async () => {
  assert.equal(
    await refusal("./my-agent.ts:agnet"),
    'AGENT_PATHS entry "./my-agent.ts:agnet": the module has no export named "agnet" (did you mean "agent"?); ' +
      "its agents and graphs: agent; its other exports: VERSION, helper",
  );
  // Nothing close: no guess, the same lists.
  assert.equal(
    await refusal("./my-agent.ts:chatbot"),
    'AGENT_PATHS entry "./my-agent.ts:chatbot": the module has no export named "chatbot"; its agents and graphs: agent; its other exports: VERSION, helper',
  );
  // The right name loads.
  assert.equal((await loadAgentFromImportString("./my-agent.ts:agent", folder)).name, "mine");
});

test("an export that is not an agent: the refusal lists those that are", async () => {
  assert.match(await refusal("./my-agent.ts:helper"), /neither an Agent nor a compiled graph; its agents and graphs: agent; its other exports: VERSION, helper$/);
});

test("a module without agents, or with many exports, or none: bounded, plain lists", async () => {
  const many = await refusal("./many.mjs:main");
  assert.match(many, /has no export named "main"; it exports no Agent or compiled graph; its exports: tool00, tool01, .*, tool19 and 10 more$/);
  assert.equal(many.split(", ").length, 20);
  assert.match(await refusal("./many.mjs:tool2"), /\(did you mean "tool02"\?\)/);
  assert.match(await refusal("./empty.mjs:agent"), /has no export named "agent"; the module exports nothing$/);
});

test("startup is refused with the same line", async () => {
  const entry = `${path.join(folder, "my-agent.ts")}:agnet`;
  await assert.rejects(startService({ AGENT_PATHS: JSON.stringify([entry]) }), (error: unknown) => {
    assert.ok(error instanceof AgentRegistryError, String(error));
    assert.ok(error.message.includes(`"${entry}": the module has no export named "agnet" (did you mean "agent"?); its agents and graphs: agent`), error.message);
    return true;
  });
});
