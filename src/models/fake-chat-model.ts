import { BaseChatModel, type BaseChatModelParams } from "@langchain/core/language_models/chat_models";
import type { BaseChatModelCallOptions, BindToolsInput } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk, type BaseMessage, type ToolCall } from "@langchain/core/messages";
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";

/** The fixed answer of the deterministic fake model. */
export const FAKE_MODEL_ANSWER = "This is a test response from the fake model.";

/** One scripted turn: text to answer and, optionally, tool calls to make. */
export interface FakeTurn {
  content?: string;
  toolCalls?: Array<Omit<ToolCall, "type">>;
}

export interface FakeChatModelFields extends BaseChatModelParams {
  /**
   * Turns to play, chosen by how many AI messages the conversation holds since its last human
   * message, so the same script replays for every new question. When the script runs out the
   * model gives FAKE_MODEL_ANSWER. Without a script every turn is FAKE_MODEL_ANSWER.
   */
  script?: readonly FakeTurn[];
}

/** Whitespace-preserving word tokens, so the streamed tokens concatenate back to the text. */
function tokenize(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/** How many whitespace-separated words `text` holds, without building them (a prompt can be long). */
function countWords(text: string): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const space = text.charCodeAt(i) <= 32;
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return words;
}

/**
 * A rough count, stable across runs: a token per four characters of each message, plus 3 per
 * message, like LangChain's own fallback estimate. Reading lengths keeps it cheap at any
 * conversation length (the fake model sees the whole conversation every turn).
 */
function countTokens(messages: readonly BaseMessage[]): number {
  let count = 0;
  for (const message of messages) {
    const text = typeof message.content === "string" ? message.content : message.text;
    count += Math.ceil(text.length / 4) + 3;
  }
  return count;
}

/**
 * Deterministic chat model for tests, demos and benchmarks: no network, no key. It reports
 * usage_metadata like a provider would, streams word by word, and accepts bound tools so agent
 * factories that require tool support can use it.
 */
export class FakeChatModel extends BaseChatModel {
  private readonly script: readonly FakeTurn[];

  constructor(fields: FakeChatModelFields = {}) {
    super(fields);
    this.script = fields.script ?? [];
  }

  _llmType(): string {
    return "agenthost-fake";
  }

  /** How LangChain (and agenthost's model metrics) name this model's provider and model. */
  override getLsParams(options: this["ParsedCallOptions"]) {
    return { ...super.getLsParams(options), ls_provider: "fake", ls_model_name: "fake" };
  }

  /** Names of the tools last bound (what an agent offered the model), for tests and demos. */
  boundToolNames: readonly string[] = [];

  override bindTools(tools: BindToolsInput[], _kwargs?: Partial<BaseChatModelCallOptions>) {
    this.boundToolNames = tools.map((tool) => {
      const named = tool as { name?: unknown; function?: { name?: unknown } };
      return String(named.name ?? named.function?.name ?? "");
    });
    return this;
  }

  private turnFor(messages: readonly BaseMessage[]): Required<FakeTurn> {
    let aiSinceHuman = 0;
    for (let i = messages.length - 1; i >= 0; i--) {
      const type = messages[i]!.getType();
      if (type === "human") break;
      if (type === "ai") aiSinceHuman++;
    }
    const scripted = this.script[aiSinceHuman];
    return { content: scripted?.content ?? (scripted ? "" : FAKE_MODEL_ANSWER), toolCalls: scripted?.toolCalls ?? [] };
  }

  private usage(messages: readonly BaseMessage[], content: string) {
    const input_tokens = countTokens(messages);
    const output_tokens = countWords(content);
    return { input_tokens, output_tokens, total_tokens: input_tokens + output_tokens };
  }

  async _generate(messages: BaseMessage[], options: this["ParsedCallOptions"]): Promise<ChatResult> {
    options.signal?.throwIfAborted();
    const turn = this.turnFor(messages);
    const message = new AIMessage({
      content: turn.content,
      tool_calls: turn.toolCalls.map((call) => ({ ...call, type: "tool_call" as const })),
      usage_metadata: this.usage(messages, turn.content),
      response_metadata: { finish_reason: turn.toolCalls.length ? "tool_calls" : "stop", model_name: "fake" },
    });
    return { generations: [{ text: turn.content, message }] };
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const turn = this.turnFor(messages);
    for (const token of tokenize(turn.content)) {
      options.signal?.throwIfAborted();
      const chunk = new ChatGenerationChunk({ text: token, message: new AIMessageChunk({ content: token }) });
      yield chunk;
      await runManager?.handleLLMNewToken(token, undefined, undefined, undefined, undefined, { chunk });
    }
    options.signal?.throwIfAborted();
    yield new ChatGenerationChunk({
      text: "",
      message: new AIMessageChunk({
        content: "",
        tool_call_chunks: turn.toolCalls.map((call, index) => ({
          id: call.id,
          name: call.name,
          args: JSON.stringify(call.args),
          index,
          type: "tool_call_chunk" as const,
        })),
        usage_metadata: this.usage(messages, turn.content),
        response_metadata: { finish_reason: turn.toolCalls.length ? "tool_calls" : "stop", model_name: "fake" },
      }),
    });
  }
}
