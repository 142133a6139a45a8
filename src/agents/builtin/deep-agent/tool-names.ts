/** The deep agent's virtual-file tools: no `execute`, no `delete` (the library's delete_file). */
export const DEEP_AGENT_FILE_TOOLS = ["ls", "read_file", "write_file", "edit_file", "glob", "grep"] as const;

/** Tools the model sees, besides remote (MCP) tools: the spec's list plus the library's `task` tool. */
const DEEP_AGENT_TOOLS = [...DEEP_AGENT_FILE_TOOLS, "add", "multiply", "write_todos", "task"] as const;

/**
 * Names no remote tool may take, for any agent: the deep agent's own tools and the library tools it
 * deliberately leaves out (a remote tool under one of these names would pass for a built-in one).
 */
export const RESERVED_TOOL_NAMES: ReadonlySet<string> = new Set([
  ...DEEP_AGENT_TOOLS,
  "execute",
  "delete",
  "delete_file",
  "start_async_task",
  "check_async_task",
  "update_async_task",
  "cancel_async_task",
  "list_async_tasks",
]);
