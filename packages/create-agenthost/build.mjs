#!/usr/bin/env node
// Build create-agenthost: dist/agenthost.json, what a new project pins, read from agenthost's own
// package.json (../../package.json) so no version is written twice: agenthost's version, its engines
// and allowed install scripts, and its versions of the packages an agent imports or is checked with.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const agenthost = JSON.parse(readFileSync(path.join(here, "../../package.json"), "utf8"));

/** What the agents import (shared with the service: one copy of each), and what checks and runs them. */
const SHARED = { dependencies: ["@langchain/core", "@langchain/langgraph", "langchain", "zod"], devDependencies: ["@types/node", "tsx", "typescript"] };

function versionsOf(field) {
  return Object.fromEntries(
    SHARED[field].map((name) => {
      const version = agenthost[field]?.[name];
      if (typeof version !== "string") throw new Error(`agenthost's package.json has no ${field}.${name}: update SHARED in ${path.join(here, "build.mjs")}`);
      return [name, version];
    }),
  );
}

const pinned = {
  version: agenthost.version,
  engines: agenthost.engines,
  allowScripts: agenthost.allowScripts,
  dependencies: versionsOf("dependencies"),
  devDependencies: versionsOf("devDependencies"),
};
mkdirSync(path.join(here, "dist"), { recursive: true });
writeFileSync(path.join(here, "dist/agenthost.json"), `${JSON.stringify(pinned, null, 2)}\n`);
