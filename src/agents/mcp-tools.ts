import { ToolMessage } from "@langchain/core/messages";
import { DynamicStructuredTool, type StructuredToolInterface } from "@langchain/core/tools";
import { isGraphInterrupt } from "@langchain/langgraph";
import type { Connection, MultiServerMCPClient } from "@langchain/mcp-adapters";
import { startupRefusalText } from "../config/load.ts";
import type { Config, McpServerConfig } from "../config/schema.ts";
import { RESERVED_TOOL_NAMES } from "./builtin/deep-agent/tool-names.ts";

/**
 * Remote tools from MCP servers (MCP_SERVERS), assigned to agents by MCP_AGENT_SERVERS and loaded once
 * at startup with @langchain/mcp-adapters. Every problem stops startup, naming what is wrong: a server
 * that does not connect or list its tools, an agent that is not registered, two tools with one name
 * for one agent, or a tool taking a name the deep agent reserves. A failing remote call is not
 * retried; the model sees it as an error tool message.
 */
export interface McpToolset {
  /** The remote tools assigned to `agentName`; empty when none. */
  toolsFor(agentName: string): readonly StructuredToolInterface[];
  /** The servers that were connected, for logs. */
  readonly servers: readonly string[];
  /** Check MCP_AGENT_SERVERS against the registered agent names. */
  unknownAgents(registered: Iterable<string>): string[];
  close(): Promise<void>;
}

export class McpToolsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(startupRefusalText("the MCP tool servers are misconfigured", problems));
    this.name = "McpToolsError";
  }
}

function connectionOf(server: McpServerConfig): Connection {
  if (server.transport === "stdio") {
    return { transport: "stdio", command: server.command, args: [...server.args], env: { ...server.env }, restart: { enabled: false } };
  }
  return {
    transport: "http",
    url: server.url,
    headers: { ...server.headers },
    reconnect: { enabled: false },
    automaticSSEFallback: server.transport === "http",
  };
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message.split("\n")[0]! : String(error);
}

/**
 * The remote tool, answering a remote failure as the tool's answer (status `error`) so the model
 * can react to it; the agent's ToolNode would otherwise fail the whole run. Aborts and interrupts
 * still propagate. The adapter's tool is left as it was: this is a new tool that calls it.
 */
function failuresAsToolErrors(tool: DynamicStructuredTool): DynamicStructuredTool {
  const func: typeof tool.func = async (input, runManager, config) => {
    try {
      return await tool.func(input, runManager, config);
    } catch (error) {
      if (isGraphInterrupt(error) || config?.signal?.aborted) throw error;
      const content = `Error: ${reason(error)}`;
      const id = (config as { toolCall?: { id?: string } } | undefined)?.toolCall?.id;
      const answer = id ? new ToolMessage({ content, tool_call_id: id, name: tool.name, status: "error" }) : content;
      return [answer, []];
    }
  };
  return new DynamicStructuredTool({
    name: tool.name,
    description: tool.description,
    schema: tool.schema,
    func,
    returnDirect: tool.returnDirect,
    responseFormat: tool.responseFormat,
    verboseParsingErrors: tool.verboseParsingErrors,
    defaultConfig: tool.defaultConfig,
    metadata: tool.metadata,
    extras: tool.extras,
    tags: tool.tags,
  });
}

export async function loadMcpToolset(config: Pick<Config, "MCP_SERVERS" | "MCP_AGENT_SERVERS">): Promise<McpToolset> {
  const wanted = [...new Set(Object.values(config.MCP_AGENT_SERVERS).flat())];
  const empty: McpToolset = {
    toolsFor: () => [],
    servers: [],
    unknownAgents: (registered) => {
      const names = new Set(registered);
      return Object.keys(config.MCP_AGENT_SERVERS).filter((agent) => !names.has(agent));
    },
    close: async () => {},
  };
  if (wanted.length === 0) return empty;
  // Loaded only here: the adapters and the MCP SDK are a sixth of a worker's start for every
  // service that has no MCP server.
  const adapters = await import("@langchain/mcp-adapters");

  const problems: string[] = [];
  const clients: MultiServerMCPClient[] = [];
  const toolsByServer = new Map<string, DynamicStructuredTool[]>();
  await Promise.all(
    wanted.map(async (name) => {
      const server = config.MCP_SERVERS[name];
      if (!server) return; // reported by the configuration check
      const client = new adapters.MultiServerMCPClient({
        mcpServers: { [name]: connectionOf(server) },
        throwOnLoadError: true,
        onConnectionError: "throw",
        prefixToolNameWithServerName: false,
        useStandardContentBlocks: true,
      });
      clients.push(client);
      try {
        toolsByServer.set(name, (await client.getTools()).map(failuresAsToolErrors));
      } catch (error) {
        problems.push(`MCP server "${name}" did not connect or list its tools: ${reason(error)}`);
      }
    }),
  );

  const byAgent = new Map<string, DynamicStructuredTool[]>();
  for (const [agent, servers] of Object.entries(config.MCP_AGENT_SERVERS)) {
    const owners = new Map<string, string>();
    const tools: DynamicStructuredTool[] = [];
    for (const server of servers) {
      for (const tool of toolsByServer.get(server) ?? []) {
        if (RESERVED_TOOL_NAMES.has(tool.name)) {
          problems.push(`MCP server "${server}" offers a tool named "${tool.name}", a name reserved by the deep agent`);
          continue;
        }
        const owner = owners.get(tool.name);
        if (owner !== undefined) {
          problems.push(`agent "${agent}" would get two tools named "${tool.name}" (from MCP servers "${owner}" and "${server}")`);
          continue;
        }
        owners.set(tool.name, server);
        tools.push(tool);
      }
    }
    byAgent.set(agent, tools);
  }

  const close = async () => {
    await Promise.allSettled(clients.map((client) => client.close()));
  };
  if (problems.length) {
    await close();
    throw new McpToolsError([...new Set(problems)]);
  }
  return {
    ...empty,
    toolsFor: (agentName) => byAgent.get(agentName) ?? [],
    servers: [...toolsByServer.keys()],
    close,
  };
}
