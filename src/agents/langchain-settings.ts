/**
 * Process-wide LangChain settings the service depends on, applied once before any graph is built.
 *
 * LangChain runs callback handlers in a background queue unless LANGCHAIN_CALLBACKS_BACKGROUND is
 * "false", and LangGraph's `messages` stream mode receives model tokens through such a handler.
 * In the background, tokens of concurrent runs queue up behind each other and arrive after their
 * stream has ended, so they are lost (measured: 8 concurrent streams of 9 tokens delivered 0–3
 * each). Awaiting handlers delivers every token, in order, before the run's final message.
 */
export function applyLangChainSettings(): void {
  process.env.LANGCHAIN_CALLBACKS_BACKGROUND = "false";
}
