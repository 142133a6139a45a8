#!/usr/bin/env node
// create-agenthost: a new agent project for agenthost in a folder (`npm create agenthost <folder>`).
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { createProject, pinned, Refusal } from "../lib/create-project.js";

const OWN_VERSION = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;

function help() {
  let agenthost = "agenthost";
  try {
    agenthost = `agenthost ${pinned().version}`;
  } catch {
    // Not built: the text still helps; creating a project says what is missing.
  }
  return `Usage: create-agenthost <folder> [--agenthost <tarball or folder>] [--name <package name>]
       npm create agenthost@latest <folder>

Creates <folder> (it must not exist, or be empty) holding an agent project for ${agenthost}: two
TypeScript agents (one calls the model, one a tool as well), their test, a Dockerfile on agenthost's
image, a README, .env.example and .env (the fake model, a token of its own), and a package.json
that pins agenthost and the LangChain packages at the versions agenthost runs with. Then:

  cd <folder> && npm install && npm start

Options:
  --agenthost <path>  install agenthost from this tarball or folder (npm pack of agenthost) instead of
                      the registry
  --name <name>       the package name (default: the folder's name)
  -h, --help          print this text
  -v, --version       print the version
`;
}

function refuse(message) {
  process.stderr.write(`create-agenthost: ${message}\n`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      agenthost: { type: "string" },
      name: { type: "string" },
      help: { type: "boolean", short: "h" },
      version: { type: "boolean", short: "v" },
    },
  });
} catch (error) {
  refuse(`${error.message} (create-agenthost --help lists the options)`);
}
const { values, positionals } = parsed;

if (values.help) {
  process.stdout.write(help());
} else if (values.version) {
  process.stdout.write(`${OWN_VERSION}\n`);
} else if (positionals.length !== 1) {
  refuse(`${positionals.length === 0 ? "name the folder to create" : "name one folder"}: create-agenthost <folder> (--help for more)`);
} else {
  const folder = positionals[0];
  try {
    const files = createProject({ folder, name: values.name ?? path.basename(path.resolve(folder)), agenthost: values.agenthost });
    const shown = path.relative(process.cwd(), path.resolve(folder)) || ".";
    process.stdout.write(
      `Created ${shown}: ${files.join(", ")}.\n\nNext:\n  cd ${shown}\n  npm install\n  npm start        # the agents with the fake model on http://localhost:8080\n  npm test\n\nREADME.md has the rest: calling the agents, a real model, deploying.\n`,
    );
  } catch (error) {
    if (error instanceof Refusal) refuse(error.message);
    throw error;
  }
}
