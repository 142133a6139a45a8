import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { openLink, type RedisLink, type RedisSource, type Subscription } from "../redis-link.ts";
import type { ActiveRuns } from "./active-runs.ts";
import type { RunCanceller } from "./run-canceller.ts";

/** How long a cancel waits for every process's answer before answering with what it has. */
const ANSWER_WAIT_MS = 1_000;

export type RedisCancellerOptions = RedisSource & {
  /** REDIS_KEY_PREFIX with its separator. */
  readonly keyPrefix: string;
};

interface StopRequest {
  readonly key: string;
  readonly reply: string;
  readonly id: string;
}

interface StopAnswer {
  readonly id: string;
  readonly runId: string | null;
}

function parse<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/**
 * Cancels across every worker of every host through Redis pub/sub. Every process subscribes to
 * `<prefix>run-stop`; a cancel publishes the conversation's key there with this process's reply
 * channel, and each subscriber answers with the run it stopped or null. PUBLISH says how many
 * subscribers got the request, so the cancel answers as soon as all have (or one stopped the run),
 * and after ANSWER_WAIT_MS at the latest.
 */
export class RedisRunCanceller implements RunCanceller {
  private readonly link: RedisLink;
  /** Whether the link is this canceller's own (given a URL), closed with it. */
  private readonly ownsLink: boolean;
  private readonly client: Redis;
  private readonly stopChannel: string;
  private readonly replyChannel: string;
  private readonly subscriptions: readonly Subscription[];
  private readonly subscribed: Promise<unknown>;
  /** Cancels waiting for answers: count one answer, or give up at once. */
  private readonly pending = new Map<string, { answer(answer: StopAnswer): void; giveUp(): void }>();

  constructor(
    options: RedisCancellerOptions,
    private readonly active: ActiveRuns,
  ) {
    ({ link: this.link, owned: this.ownsLink } = openLink(options));
    this.client = this.link.commands;
    this.stopChannel = `${options.keyPrefix}run-stop`;
    this.replyChannel = `${options.keyPrefix}run-stop-reply:${randomUUID()}`;
    this.subscriptions = [
      this.link.subscribe(this.stopChannel, (text) => this.onStop(text)),
      this.link.subscribe(this.replyChannel, (text) => {
        const answer = parse<StopAnswer>(text);
        if (answer) this.pending.get(answer.id)?.answer(answer);
      }),
    ];
    this.subscribed = Promise.all(this.subscriptions.map((subscription) => subscription.ready));
  }

  private onStop(text: string): void {
    const request = parse<StopRequest>(text);
    if (!request) return;
    const answer: StopAnswer = { id: request.id, runId: this.active.stop(request.key) ?? null };
    this.client.publish(request.reply, JSON.stringify(answer)).catch(() => {});
  }

  async cancel(key: string): Promise<string | undefined> {
    const here = this.active.stop(key);
    if (here !== undefined) return here;
    await this.subscribed;
    const id = randomUUID();
    let expected = Infinity;
    let answered = 0;
    let done: (runId: string | undefined) => void = () => {};
    const outcome = new Promise<string | undefined>((resolve) => {
      const timer = setTimeout(() => done(undefined), ANSWER_WAIT_MS);
      done = (runId) => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(runId);
      };
    });
    this.pending.set(id, {
      answer: ({ runId }) => {
        answered++;
        if (runId !== null) done(runId);
        else if (answered >= expected) done(undefined);
      },
      giveUp: () => done(undefined),
    });
    const request: StopRequest = { key, reply: this.replyChannel, id };
    try {
      expected = await this.client.publish(this.stopChannel, JSON.stringify(request));
    } catch (error) {
      done(undefined);
      throw error;
    }
    if (answered >= expected) done(undefined);
    return outcome;
  }

  async close(): Promise<void> {
    for (const waiting of this.pending.values()) waiting.giveUp();
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    if (this.ownsLink) this.link.close();
  }
}
