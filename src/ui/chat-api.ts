import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { z } from "zod";
import type { AgentClient } from "../client/index.ts";
import { toBrowserError, toBrowserMessage, type BrowserMessage } from "./browser-view.ts";
import type { FeedbackTokens } from "./feedback-tokens.ts";

const name = z.string().min(1).max(200);

export const chatRequest = z.strictObject({
  agent: name,
  thread_id: name.optional(),
  message: z.string().trim().min(1).max(100_000),
});

export const feedbackRequest = z.strictObject({
  agent: name,
  run_id: name,
  /** 1 for thumbs up, 0 for thumbs down. */
  score: z.union([z.literal(0), z.literal(1)]),
});

/** The feedback key the page records thumbs under. */
export const FEEDBACK_KEY = "human-feedback-thumbs";

/**
 * What the page's browser code can ask for. Each call goes to agenthost through the one AgentClient
 * that holds the token, acting for the configured user; answers are trimmed to BrowserMessage.
 */
export class ChatApi {
  constructor(
    private readonly client: AgentClient,
    private readonly userId: string | undefined,
    private readonly tokens: FeedbackTokens,
  ) {}

  async agents(signal: AbortSignal): Promise<{ agents: { key: string; description: string }[]; default_agent: string }> {
    const info = await this.client.info({ signal });
    return {
      agents: info.agents.map((a) => ({ key: String(a.key), description: String(a.description ?? "") })),
      default_agent: info.default_agent,
    };
  }

  /** The whole conversation, every page. */
  async history(agent: string, threadId: string, signal: AbortSignal): Promise<{ messages: BrowserMessage[] }> {
    const messages: BrowserMessage[] = [];
    const query = { thread_id: threadId, limit: 100, ...this.identity() };
    for await (const page of this.client.historyPages(query, { agent, signal })) {
      messages.push(...page.messages.map(toBrowserMessage));
    }
    return { messages };
  }

  /**
   * Stream one run to the browser as JSON Lines: `thread` (the conversation id, created here for a new
   * chat), then `token` and `message` events, then `done`, or `error` with the failure. Feedback proofs
   * are kept here by run id. Closing the browser's request cancels the run's stream.
   */
  async chat(input: z.infer<typeof chatRequest>, res: ServerResponse): Promise<void> {
    const threadId = input.thread_id ?? randomUUID();
    const cancel = new AbortController();
    res.on("close", () => cancel.abort());
    res.writeHead(200, {
      "content-type": "application/x-ndjson; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    });
    const send = (event: unknown) => res.write(`${JSON.stringify(event)}\n`);
    send({ type: "thread", thread_id: threadId });
    try {
      const stream = this.client.stream(input.message, {
        agent: input.agent,
        thread_id: threadId,
        stream_tokens: true,
        signal: cancel.signal,
        ...this.identity(),
      });
      for await (const item of stream) {
        if (typeof item === "string") {
          send({ type: "token", content: item });
          continue;
        }
        if (typeof item.run_id === "string" && typeof item.feedback_token === "string") {
          this.tokens.remember(input.agent, item.run_id, item.feedback_token);
        }
        send({ type: "message", content: toBrowserMessage(item) });
      }
      send({ type: "done" });
    } catch (error) {
      if (cancel.signal.aborted) return;
      console.error(`chat-ui: run on ${input.agent} failed: ${error instanceof Error ? error.message : String(error)}`);
      send({ type: "error", error: toBrowserError(error) });
    } finally {
      res.end();
    }
  }

  /** Thumbs up or down on a run, with the proof this page received for it, if any. */
  async feedback(input: z.infer<typeof feedbackRequest>, signal: AbortSignal): Promise<void> {
    const token = this.tokens.lookup(input.agent, input.run_id);
    await this.client.createFeedback(
      {
        run_id: input.run_id,
        key: FEEDBACK_KEY,
        score: input.score,
        ...this.identity(),
        ...(token === undefined ? {} : { feedback_token: token }),
      },
      { agent: input.agent, signal },
    );
  }

  private identity(): { user_id?: string } {
    return this.userId === undefined ? {} : { user_id: this.userId };
  }
}
