import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";

/** Messages `from` .. `from + size` of a synthetic conversation: questions and model-like answers with usage. */
export function conversation(size: number, from: number): BaseMessage[] {
  const out: BaseMessage[] = [];
  for (let i = from; i < from + size; i++) {
    out.push(
      i % 2 === 0
        ? new HumanMessage({ content: `Question ${i}: what is the next step in the plan we discussed?` })
        : new AIMessage({
            content: `Answer ${i}: this is a test response from the fake model, long enough to look like a reply.`,
            usage_metadata: { input_tokens: 40 + (i % 7), output_tokens: 20, total_tokens: 60 + (i % 7) },
            response_metadata: { finish_reason: "stop", model_name: "fake" },
          }),
    );
  }
  return out;
}
