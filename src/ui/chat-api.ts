import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { z } from "zod";
import { type AgentClient, type ChatMessage, type ContentBlock } from "../client/index.ts";
import { toBrowserError, toBrowserMessage, type BrowserMessage } from "./browser-view.ts";
import type { AnswerRelays } from "./answer-relay.ts";
import type { FeedbackTokens } from "./feedback-tokens.ts";

const name = z.string().min(1).max(200);

const attachment = z.strictObject({
  type: z.enum(["image", "file"]),
  base64: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, { error: "must be base64" }),
  mime_type: z.string().min(1).max(200),
  filename: z.string().min(1).max(300).optional(),
});

export const chatRequest = z
  .strictObject({
    agent: name,
    thread_id: name.optional(),
    message: z.string().trim().max(100_000),
    attachments: z.array(attachment).max(1000).optional(),
    /**
     * Answers to a paused run's questions, keyed by interrupt id: sent as `input.resume`, which the
     * service gives to the named interrupts only (the others stay pending).
     */
    resume: z.record(name, z.string().trim().min(1).max(100_000)).optional(),
  })
  .refine((body) => body.message !== "" || (body.attachments?.length ?? 0) > 0, {
    error: "send a message or an attachment",
    path: ["message"],
  });

/** The bytes a base64 text decodes to. */
export function decodedBytes(base64: string): number {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return Math.floor((base64.length * 3) / 4) - padding;
}

export const feedbackRequest = z.strictObject({
  agent: name,
  run_id: name,
  /** 1 for thumbs up, 0 for thumbs down. */
  score: z.union([z.literal(0), z.literal(1)]),
});

export const cancelRequest = z.strictObject({ agent: name, thread_id: name });

export const clearRequest = z.strictObject({ agent: name, thread_id: name });

/** How many messages one history page of the page holds, and how many conversations one list page. */
export const HISTORY_PAGE = 50;
export const THREAD_PAGE = 30;
const ANSWER_RUNS_KEPT = 5000;

/** Where agenthost says a feedback went (its answer's `delivery`). */
const FEEDBACK_DELIVERIES = ["delivered", "queued", "skipped"] as const;
type FeedbackDelivery = (typeof FEEDBACK_DELIVERIES)[number];

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
    private readonly relays: AnswerRelays,
  ) {}

  /**
   * Run ids of the answers this page received, by conversation and text: stored messages carry no
   * run id, so a restored answer gets its feedback buttons from here (while this process remembers).
   */
  private readonly answerRuns = new Map<string, string>();

  private answerKey(agent: string, threadId: string, content: unknown): string {
    return JSON.stringify([agent, threadId, content]);
  }

  private rememberAnswer(agent: string, threadId: string, message: ChatMessage): void {
    if (message.type !== "ai" || typeof message.run_id !== "string") return;
    const key = this.answerKey(agent, threadId, message.content);
    this.answerRuns.delete(key);
    this.answerRuns.set(key, message.run_id);
    for (const oldest of this.answerRuns.keys()) {
      if (this.answerRuns.size <= ANSWER_RUNS_KEPT) break;
      this.answerRuns.delete(oldest);
    }
  }

  private restored(agent: string, threadId: string, message: ChatMessage): BrowserMessage {
    const view = toBrowserMessage(message);
    if (view.type === "ai" && view.run_id === null) view.run_id = this.answerRuns.get(this.answerKey(agent, threadId, message.content)) ?? null;
    return view;
  }

  /** The agents, and the attachments per message agenthost allows when its /info names them. */
  async agents(
    signal: AbortSignal,
  ): Promise<{ agents: { key: string; description: string }[]; default_agent: string; max_attachments: number | undefined }> {
    const info = await this.client.info({ signal });
    const most = info.limits?.max_attachments;
    return {
      agents: info.agents.map((a) => ({ key: String(a.key), description: String(a.description ?? "") })),
      default_agent: info.default_agent,
      max_attachments: typeof most === "number" && Number.isInteger(most) && most >= 0 ? most : undefined,
    };
  }

  /** One page of the user's conversations with the agent, most recently updated first. */
  async threads(
    agent: string,
    offset: number | undefined,
    signal: AbortSignal,
  ): Promise<{ threads: { thread_id: string; title: string | null; updated_at: string }[]; next_offset: number | null }> {
    const page = await this.client.listThreads({ limit: THREAD_PAGE, offset: offset ?? 0, ...this.identity() }, { agent, signal });
    return {
      threads: page.threads.map((t) => ({ thread_id: t.thread_id, title: t.title, updated_at: t.updated_at })),
      next_offset: page.next_offset,
    };
  }

  /**
   * The newest HISTORY_PAGE messages of a conversation that come before message number `before` (the
   * newest overall when omitted), oldest first; `older` is where the page before this one ends, null
   * at the conversation's start. The newest page also carries what a paused run waits for
   * (`interrupts`, from the service's first history page), so a reloaded page can answer it.
   */
  async history(
    agent: string,
    threadId: string,
    before: number | undefined,
    signal: AbortSignal,
  ): Promise<{ messages: BrowserMessage[]; older: number | null; interrupts?: unknown[] }> {
    const query = { thread_id: threadId, ...this.identity() };
    let interrupts: { interrupts?: unknown[] } = {};
    if (before === undefined) {
      const first = await this.client.getHistory({ ...query, offset: 0, limit: HISTORY_PAGE }, { agent, signal });
      if (Array.isArray(first.interrupts) && first.interrupts.length > 0) interrupts = { interrupts: first.interrupts };
      if (first.total <= HISTORY_PAGE) {
        const rest = first.next_offset === null ? [] : await this.range(agent, query, first.next_offset, first.total, signal);
        return { messages: [...first.messages, ...rest].map((m) => this.restored(agent, threadId, m)), older: null, ...interrupts };
      }
      before = first.total;
    }
    const start = Math.max(0, before - HISTORY_PAGE);
    const messages = await this.range(agent, query, start, before, signal);
    return { messages: messages.map((m) => this.restored(agent, threadId, m)), older: start > 0 ? start : null, ...interrupts };
  }

  /** Messages `start` to `end` (exclusive), over as many pages as the service answers them in. */
  private async range(
    agent: string,
    query: { thread_id: string; user_id?: string },
    start: number,
    end: number,
    signal: AbortSignal,
  ): Promise<ChatMessage[]> {
    const messages: ChatMessage[] = [];
    let offset = start;
    while (offset < end) {
      const page = await this.client.getHistory({ ...query, offset, limit: Math.min(100, end - offset) }, { agent, signal });
      messages.push(...page.messages.slice(0, end - offset));
      if (page.next_offset === null || page.next_offset <= offset) break;
      offset = page.next_offset;
    }
    return messages;
  }

  /** Stop the run that holds the conversation, wherever it runs. */
  async cancel(input: z.infer<typeof cancelRequest>, signal: AbortSignal): Promise<{ cancelled: boolean }> {
    const result = await this.client.cancel({ thread_id: input.thread_id, ...this.identity() }, { agent: input.agent, signal });
    return { cancelled: result.cancelled };
  }

  /** Delete a conversation (all its checkpoints). */
  async clear(input: z.infer<typeof clearRequest>, signal: AbortSignal): Promise<void> {
    await this.client.clearHistory({ thread_id: input.thread_id, ...this.identity() }, { agent: input.agent, signal });
  }

  /**
   * Stream one run to the browser as JSON Lines: `thread` (the conversation id, created here for a new
   * chat), then `token` and `message` events, then `done`, or `error` with the failure. Feedback proofs
   * are kept here by run id. Events carry a `seq`, and the `thread` event the answer's `stream_id`, so
   * a browser whose connection drops can follow the answer again (`follow`). The stream to agenthost is
   * resumable, so a dropped connection there is picked up again too. A browser that leaves mid-answer
   * and does not come back within the relays' grace time stops the run (POST /cancel, once the run
   * has answered something), as a plain stream's client leaving would.
   */
  async chat(input: z.infer<typeof chatRequest>, res: ServerResponse): Promise<void> {
    const threadId = input.thread_id ?? randomUUID();
    const cancel = new AbortController();
    let started = false;
    const relay = this.relays.open(() => {
      cancel.abort();
      if (started) this.stopLeftRun(input.agent, threadId);
    });
    relay.follow(res, 0);
    relay.push({ type: "thread", thread_id: threadId, stream_id: relay.id });
    try {
      const blocks: ContentBlock[] = [
        ...(input.message === "" ? [] : [{ type: "text" as const, text: input.message }]),
        ...(input.attachments ?? []),
      ];
      const content = input.attachments?.length ? blocks : input.message;
      const stream = this.client.stream(content, {
        agent: input.agent,
        thread_id: threadId,
        stream_tokens: true,
        // A dropped connection to agenthost is picked up again where it left off (the run goes on meanwhile).
        resumable: true,
        signal: cancel.signal,
        ...(input.resume === undefined ? {} : { resume: input.resume }),
        ...this.identity(),
      });
      for await (const item of stream) {
        started = true;
        if (typeof item === "string") {
          relay.push({ type: "token", content: item });
          continue;
        }
        if (typeof item.run_id === "string" && typeof item.feedback_token === "string") {
          this.tokens.remember(input.agent, item.run_id, item.feedback_token);
        }
        this.rememberAnswer(input.agent, threadId, item);
        relay.push({ type: "message", content: toBrowserMessage(item) });
      }
      relay.push({ type: "done" });
    } catch (error) {
      // The browser left and did not come back: the run was stopped (onLeft above).
      if (cancel.signal.aborted) return;
      console.error(`chat-ui: run on ${input.agent} failed: ${error instanceof Error ? error.message : String(error)}`);
      relay.push({ type: "error", error: toBrowserError(error) });
    } finally {
      this.relays.close(relay);
    }
  }

  /**
   * A browser whose connection dropped mid-answer picks the answer up again: every event after number
   * `after`, then the rest live. False when the answer is unknown or long gone.
   */
  follow(streamId: string, after: number, res: ServerResponse): boolean {
    const relay = this.relays.get(streamId);
    if (!relay) return false;
    relay.follow(res, after);
    return true;
  }

  private stopLeftRun(agent: string, threadId: string): void {
    this.client.cancel({ thread_id: threadId, ...this.identity() }, { agent }).catch((error: unknown) => {
      console.error(`chat-ui: stopping the run the browser left on ${agent} failed: ${error instanceof Error ? error.message : String(error)}`);
    });
  }

  /**
   * Thumbs up or down on a run, with the proof this page received for it, if any. `delivery` is
   * agenthost's word on where the feedback went: "skipped" when it records feedback nowhere, null when
   * it did not say (an older agenthost).
   */
  async feedback(input: z.infer<typeof feedbackRequest>, signal: AbortSignal): Promise<{ delivery: FeedbackDelivery | null }> {
    const token = this.tokens.lookup(input.agent, input.run_id);
    const answer = await this.client.createFeedback(
      {
        run_id: input.run_id,
        key: FEEDBACK_KEY,
        score: input.score,
        ...this.identity(),
        ...(token === undefined ? {} : { feedback_token: token }),
      },
      { agent: input.agent, signal },
    );
    const delivery = FEEDBACK_DELIVERIES.find((known) => known === answer.delivery);
    return { delivery: delivery ?? null };
  }

  private identity(): { user_id?: string } {
    return this.userId === undefined ? {} : { user_id: this.userId };
  }
}
