/**
 * The two servers of bench/peer.ts, each pinned to its own core:
 *
 *   - agenthost: bin/agenthost, one worker, the memory backend, the fake model (load-service.ts);
 *   - LangGraph's own JS server, `langgraphjs dev` of @langchain/langgraph-cli (its in-memory
 *     server), serving the one-node graph of bench/floor-graph.ts over agenthost's fake model, from
 *     a project folder written at run time in a temporary directory and removed afterwards.
 *
 * The peer runs with what a team gets from `langgraphjs dev` but the reloader, the browser and the
 * CLI's usage report (no network): its ten queue workers (`--n-jobs-per-worker`), its request log,
 * its state in memory flushed to the project folder.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { freePort, startService, type Server } from "./load-service.ts";

/** The peer's core when the machine has two (agenthost's is core 0: load-service.ts pins it there). */
export const PEER_CORE = 1;
export const AGENTHOST_CORE = 0;

/** Nothing reports to LangSmith, from either server. */
const NO_TRACING = { LANGSMITH_TRACING: "false", LANGCHAIN_TRACING_V2: "false", LANGCHAIN_TRACING: "false", LANGSMITH_TRACING_V2: "false" };

export function startAgenthost(root: string): Promise<Server> {
  return startService(root, { MEMORY_BACKEND: "memory", ...NO_TRACING });
}

/** The graph the peer serves: the floor's one node, the fake model over the conversation. */
function graphSource(root: string): string {
  const fakeModel = pathToFileURL(path.join(root, "src/models/fake-chat-model.ts")).href;
  return [
    `import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";`,
    `import { FakeChatModel } from ${JSON.stringify(fakeModel)};`,
    ``,
    `const model = new FakeChatModel({});`,
    ``,
    `// The server gives the graph its own checkpointer.`,
    `export const graph = new StateGraph(MessagesAnnotation)`,
    `  .addNode("chatbot", async (state, config) => ({ messages: [await model.invoke(state.messages, config)] }))`,
    `  .addEdge("__start__", "chatbot")`,
    `  .addEdge("chatbot", "__end__")`,
    `  .compile();`,
    ``,
  ].join("\n");
}

/** The pids of `pid`'s descendants, now. */
function descendants(pid: number): number[] {
  const found: number[] = [];
  const visit = (p: number) => {
    let tasks: string[];
    try {
      tasks = fs.readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let children: string;
      try {
        children = fs.readFileSync(`/proc/${p}/task/${task}/children`, "utf8").trim();
      } catch {
        continue;
      }
      for (const child of children ? children.split(" ").map(Number) : []) {
        found.push(child);
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}

const alive = (pid: number) => fs.existsSync(`/proc/${pid}`);

async function answers(port: number, route: string): Promise<boolean> {
  return new Promise((resolve) => {
    http
      .get({ port, host: "127.0.0.1", path: route }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      })
      .on("error", () => resolve(false))
      .end();
  });
}

export interface PeerServer extends Server {
  /** Forget every thread, run and checkpoint (the server's own /internal/truncate), so its state does not grow between rounds. */
  truncate(): Promise<void>;
}

/** LangGraph's server, on PEER_CORE when `pinned`, once it answers. */
export async function startPeer(root: string, pinned: boolean): Promise<PeerServer> {
  const project = fs.mkdtempSync(path.join(os.tmpdir(), "agenthost-peer-"));
  // The graph's own imports resolve to this checkout's packages, the ones the server itself loads.
  fs.symlinkSync(path.join(root, "node_modules"), path.join(project, "node_modules"), "dir");
  fs.writeFileSync(path.join(project, "graph.ts"), graphSource(root));
  fs.writeFileSync(path.join(project, "langgraph.json"), `${JSON.stringify({ node_version: "20", graphs: { "chatbot-agent": "./graph.ts:graph" } }, null, 2)}\n`);

  const port = freePort();
  const cli = path.join(root, "node_modules/@langchain/langgraph-cli/dist/cli/cli.mjs");
  const args = [cli, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", String(port), "--config", path.join(project, "langgraph.json")];
  // A Studio address given means the CLI does not ask LangSmith for one; it is printed, never opened.
  args.push("--studio-url", "http://127.0.0.1:9");
  const env = { ...process.env, ...NO_TRACING, LANGGRAPH_CLI_NO_ANALYTICS: "1", BROWSER: "none" };
  const options = { cwd: project, env, stdio: ["ignore", "ignore", "pipe"] as ("ignore" | "pipe")[] };
  const child: ChildProcess = pinned ? spawn("taskset", ["-c", String(PEER_CORE), process.execPath, ...args], options) : spawn(process.execPath, args, options);
  let errorOutput = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    errorOutput = (errorOutput + chunk.toString("utf8")).slice(-4_000);
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));

  const stop = async () => {
    const tree = [child.pid!, ...descendants(child.pid!)];
    child.kill("SIGTERM");
    await exited;
    // The CLI ends its server as it exits; whatever of the tree is still there after 5 s is ended.
    const end = performance.now() + 5_000;
    while (tree.some(alive) && performance.now() < end) await new Promise((resolve) => setTimeout(resolve, 100));
    for (const pid of tree.filter(alive)) process.kill(pid, "SIGKILL");
    fs.rmSync(project, { recursive: true, force: true });
  };

  for (let attempt = 0; !(await answers(port, "/ok")); attempt++) {
    if (child.exitCode !== null || attempt > 1_200) {
      await stop();
      throw new Error(`LangGraph's server did not start:\n${errorOutput}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The pid of `taskset` is the CLI's: taskset execs the command.
  return {
    port,
    pid: child.pid!,
    stop,
    truncate: () =>
      new Promise<void>((resolve, reject) => {
        const body = JSON.stringify({ runs: true, threads: true, checkpointer: true, store: true });
        const req = http.request(
          { host: "127.0.0.1", port, method: "POST", path: "/internal/truncate", headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
          (res) => {
            res.resume();
            res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`truncate answered ${res.statusCode}`))));
          },
        );
        req.on("error", reject);
        req.end(body);
      }),
  };
}
