type Env = Readonly<Record<string, string | undefined>>;

/**
 * LangChain runs callback handlers in a background queue unless LANGCHAIN_CALLBACKS_BACKGROUND is
 * "false", and LangGraph's `messages` stream mode receives model tokens through such a handler.
 * In the background, tokens of concurrent runs queue up behind each other and arrive after their
 * stream has ended, so they are lost (measured: 8 concurrent streams of 9 tokens delivered 0–3
 * each). Awaiting handlers delivers every token, in order, before the run's final message.
 *
 * LangChain reads the variable from the process environment itself, whenever it makes a handler,
 * so the process must be started with it: bin/agenthost exports it, and so do the test runners.
 * agenthost never writes the environment; it refuses to serve without the setting.
 */
export function langChainEnvironmentProblems(env: Env = process.env): string[] {
  if (env.LANGCHAIN_CALLBACKS_BACKGROUND === "false") return [];
  return [
    "LANGCHAIN_CALLBACKS_BACKGROUND must be \"false\" in the process environment (bin/agenthost sets it), or streamed tokens are lost",
  ];
}

/**
 * Whether LangChain traces to LangSmith by its own environment variables (any of these "true"):
 * it then adds a tracer to every run itself, whatever OBSERVABILITY_BACKEND says.
 */
export function langChainTracingFromEnvironment(env: Env = process.env): boolean {
  return ["LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING", "LANGCHAIN_TRACING"].some((name) => env[name] === "true");
}
