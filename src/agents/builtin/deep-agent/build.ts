import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { StructuredToolInterface } from "@langchain/core/tools";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { createDeepAgent, createFilesystemMiddleware } from "deepagents";
import { todoListMiddleware } from "langchain";
import { conversationRecordMiddleware } from "../../conversation-record.ts";
import type { CompiledGraph } from "../../agent.ts";
import { addTool, multiplyTool } from "../tools.ts";
import { DEEP_AGENT_FILE_TOOLS } from "./tool-names.ts";

const SYSTEM_PROMPT = [
  "You are a careful assistant with a private virtual file system for this conversation.",
  "Use write_todos to plan multi-step work, the file tools (ls, read_file, write_file, edit_file, glob, grep) to keep notes and drafts,",
  "add and multiply for arithmetic, and task to delegate a self-contained piece of work to a subagent.",
  "Files live only in this conversation: there is no host disk and no shell.",
].join(" ");

export interface DeepAgentOptions {
  readonly model: BaseChatModel;
  /** Remote (MCP) tools assigned to the deep agent. */
  readonly tools?: readonly StructuredToolInterface[];
  readonly checkpointer?: BaseCheckpointSaver;
  /** Tools that pause for approval (an interrupt) before they run. */
  readonly interruptOn?: readonly string[];
}

/**
 * Build the deep agent graph on the pinned `deepagents` library: state-backed virtual files (the
 * library's default StateBackend, so the files are checkpoint state and go with the conversation),
 * context summarisation (on by default in the library), the general-purpose subagent behind `task`,
 * and a todo list. The library's FilesystemMiddleware is replaced by one limited to the six file tools,
 * which removes `execute` and `delete`; no store and no host directory are configured.
 */
export function buildDeepAgentGraph(options: DeepAgentOptions): CompiledGraph {
  const interruptOn = options.interruptOn?.length
    ? Object.fromEntries(options.interruptOn.map((name) => [name, { allowedDecisions: ["approve", "edit", "reject"] as const }]))
    : undefined;
  const agent = createDeepAgent({
    name: "deep-agent",
    model: options.model,
    systemPrompt: SYSTEM_PROMPT,
    tools: [addTool, multiplyTool, ...(options.tools ?? [])] as never,
    middleware: [createFilesystemMiddleware({ tools: DEEP_AGENT_FILE_TOOLS }), todoListMiddleware(), conversationRecordMiddleware()] as const,
    ...(options.checkpointer ? { checkpointer: options.checkpointer } : {}),
    ...(interruptOn ? { interruptOn: interruptOn as never } : {}),
  });
  return agent.graph as unknown as CompiledGraph;
}
