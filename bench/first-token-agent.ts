/**
 * The agent bench/first-token.ts streams from: one model call whose tokens are the times they were
 * produced (process.hrtime.bigint(), nanoseconds on the monotonic clock every process on the machine
 * shares), so a client can tell how long each token took from the graph to its socket.
 */
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import { ChatGenerationChunk } from "@langchain/core/outputs";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { FakeChatModel } from "../src/models/fake-chat-model.ts";

/** Tokens per answer, as many as the fake model's usual answer has words. */
export const TOKENS = 9;

class ClockedModel extends FakeChatModel {
  override async *_streamResponseChunks(
    _messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    for (let i = 0; i < TOKENS; i++) {
      options.signal?.throwIfAborted();
      const token = `${process.hrtime.bigint()} `;
      const chunk = new ChatGenerationChunk({ text: token, message: new AIMessageChunk({ content: token }) });
      yield chunk;
      await runManager?.handleLLMNewToken(token, undefined, undefined, undefined, undefined, { chunk });
    }
  }
}

const model = new ClockedModel();

export const clockedAgent = new StateGraph(MessagesAnnotation)
  .addNode("model", async (state, config) => ({ messages: [await model.invoke(state.messages, config)] }))
  .addEdge("__start__", "model")
  .addEdge("model", "__end__")
  .compile({ name: "clocked-agent" });
