// bin/chat-ui as people start it: a busy port or a host that is not this machine's is refused with one
// line on stderr naming the setting to change, and exit code 2, as agenthost refuses its own.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const BIN = fileURLToPath(new URL("../../bin/chat-ui", import.meta.url));

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function runChatUi(env: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, [], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", AGENTHOST_URL: "http://127.0.0.1:9", ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

function assertRefusal(outcome: Outcome, line: string): void {
  assert.equal(outcome.code, 2, outcome.stderr);
  assert.equal(outcome.stderr, `${line}\n`, "one line, no stack trace");
  assert.equal(outcome.stdout, "", "the page never said it listens");
}

test("a busy CHAT_UI_PORT is refused in one line naming CHAT_UI_PORT, exit 2", async () => {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  const { port } = holder.address() as net.AddressInfo;
  try {
    const outcome = await runChatUi({ CHAT_UI_HOST: "127.0.0.1", CHAT_UI_PORT: String(port) });
    assertRefusal(
      outcome,
      `the chat page cannot start: CHAT_UI_PORT ${port} is already in use on 127.0.0.1: stop the process holding it, or set CHAT_UI_PORT to a free port (0 lets the system pick one)`,
    );
  } finally {
    await new Promise<void>((resolve) => holder.close(() => resolve()));
  }
});

test("a CHAT_UI_HOST that is not an address of this machine is refused in one line naming CHAT_UI_HOST, exit 2", async () => {
  // 192.0.2.1 is reserved for documentation (TEST-NET-1): never an address of this machine.
  const outcome = await runChatUi({ CHAT_UI_HOST: "192.0.2.1", CHAT_UI_PORT: "0" });
  assertRefusal(
    outcome,
    "the chat page cannot start: CHAT_UI_HOST 192.0.2.1 is not an address of this machine: set CHAT_UI_HOST to 127.0.0.1, 0.0.0.0 or one of its addresses",
  );
});
