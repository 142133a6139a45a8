import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { FakeChatModel } from "../../src/models/fake-chat-model.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { closedPort, parseEvents } from "../fixtures/providers/events.ts";
import { startHttpMcpServer, type HttpMcpServer } from "../fixtures/mcp/http-server.ts";

/** MCP tools from real MCP servers (the SDK's server over streamable HTTP and over stdio). */

const ROOT = path.resolve(import.meta.dirname, "../..");
const AGENTS = `${path.join(ROOT, "test/fixtures/mcp/agents.ts")}:mcpCaller`;
const STDIO_SERVER = path.join(ROOT, "test/fixtures/mcp/stdio-server.ts");

const stdio = (tools: string) => ({ transport: "stdio", command: process.execPath, args: ["--import", "tsx", STDIO_SERVER, tools] });

describe("MCP tools", { concurrency: false }, () => {
  let web: HttpMcpServer;
  let service: RunningService;

  before(async () => {
    web = await startHttpMcpServer(["lookup_weather", "explode"]);
    service = await startService({
      AGENT_PATHS: JSON.stringify([AGENTS]),
      MCP_SERVERS: JSON.stringify({
        web: { url: web.url, headers: { authorization: "Bearer mcp-remote-secret" } },
        local: stdio("echo_upper"),
      }),
      MCP_AGENT_SERVERS: JSON.stringify({ "mcp-caller": ["web", "local"], "deep-agent": ["local"] }),
    });
  });
  after(async () => {
    await service?.close();
    await web?.close();
  });

  test("each agent gets the tools of its servers, and only those", () => {
    const names = (agent: string) => service.runtime.mcp.toolsFor(agent).map((t) => t.name).sort();
    assert.deepEqual(names("mcp-caller"), ["echo_upper", "explode", "lookup_weather"]);
    assert.deepEqual(names("deep-agent"), ["echo_upper"]);
    assert.deepEqual(names("create-agent"), []);
  });

  test("remote tools run over HTTP and stdio; a remote failure is a tool error, not retried, and the run goes on", async () => {
    const before = web.calls.length;
    const response = await call(service, "POST", "/mcp-caller/stream", { input: { message: "Use the tools." }, stream_tokens: false });
    assert.equal(response.status, 200);
    const { events, done } = parseEvents("sse", await response.text());
    assert.ok(done);
    const tools = events
      .filter((e) => e.type === "message" && (e.content as { type: string }).type === "tool")
      .map((e) => JSON.stringify((e.content as { content: unknown }).content));
    assert.equal(tools.length, 3, JSON.stringify(events));
    assert.match(tools[0]!, /Sunny and 21 degrees in Oslo/);
    assert.match(tools[1]!, /^"Error: .*remote failure: the widget service is down/);
    assert.match(tools[2]!, /DONE/);
    const final = events.at(-1)!.content as { content: string };
    assert.equal(final.content, "All remote tools answered.");
    assert.deepEqual(web.calls.slice(before).map((c) => c.tool), ["lookup_weather", "explode"], "explode was called once");
    assert.ok(web.headers.some((h) => h.authorization === "Bearer mcp-remote-secret"), "configured headers are sent");
  });

  test("the deep agent offers its remote tools beside its own", async () => {
    const response = await call(service, "POST", "/deep-agent/invoke", { input: { message: "Hi" } });
    assert.equal(response.status, 200);
    const model = service.runtime.models.deepAgent as FakeChatModel;
    assert.ok(model.boundToolNames.includes("echo_upper"));
    assert.ok(model.boundToolNames.includes("write_file"));
  });
});

describe("MCP configuration problems stop startup, naming them", () => {
  let web: HttpMcpServer;
  let reserved: HttpMcpServer;
  before(async () => {
    web = await startHttpMcpServer(["lookup_weather"]);
    reserved = await startHttpMcpServer(["read_file", "task"]);
  });
  after(async () => {
    await web?.close();
    await reserved?.close();
  });

  const start = (servers: Record<string, unknown>, assignment: Record<string, string[]>) =>
    startService({ MCP_SERVERS: JSON.stringify(servers), MCP_AGENT_SERVERS: JSON.stringify(assignment) });

  test("two tools with one name for one agent", async () => {
    await assert.rejects(
      start({ a: { url: web.url }, b: stdio("lookup_weather") }, { "create-agent": ["a", "b"] }),
      /agent "create-agent" would get two tools named "lookup_weather" \(from MCP servers "a" and "b"\)/,
    );
  });

  test("names reserved by the deep agent", async () => {
    await assert.rejects(start({ files: { url: reserved.url } }, { "create-agent": ["files"] }), (error: Error) => {
      assert.match(error.message, /MCP server "files" offers a tool named "read_file", a name reserved by the deep agent/);
      assert.match(error.message, /a tool named "task"/);
      return true;
    });
  });

  test("a server that does not answer", async () => {
    const port = await closedPort();
    await assert.rejects(
      start({ gone: { url: `http://127.0.0.1:${port}/mcp` } }, { "create-agent": ["gone"] }),
      /MCP server "gone" did not connect or list its tools/,
    );
  });

  test("an agent that is not registered, and a server that is not configured", async () => {
    await assert.rejects(start({ web: { url: web.url } }, { nobody: ["web"] }), /MCP_AGENT_SERVERS names "nobody", which is not a registered agent/);
    await assert.rejects(start({}, { "create-agent": ["missing"] }), /MCP_AGENT_SERVERS\.create-agent names "missing", which is not in MCP_SERVERS/);
  });
});
