import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";

/**
 * One answer on its way to the browser, kept so a browser whose connection drops can pick it up
 * again: every event gets a sequence number (`seq`) and stays here until the answer has ended and
 * `keepMs` more have passed. At most one browser connection follows it at a time. When the
 * following connection closes before the end, `onLeft` runs after `graceMs` unless a browser came
 * back (the chat API then stops the run).
 */
export class AnswerRelay {
  readonly id = randomUUID();
  private readonly lines: string[] = [];
  private follower: ServerResponse | null = null;
  private ended = false;
  private leftTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly graceMs: number,
    private readonly onLeft: () => void,
  ) {}

  push(event: Record<string, unknown>): void {
    const line = `${JSON.stringify({ ...event, seq: this.lines.length + 1 })}\n`;
    this.lines.push(line);
    this.follower?.write(line);
  }

  /** The answer is complete (or failed): followers get the end of the stream. */
  end(): void {
    this.ended = true;
    clearTimeout(this.leftTimer);
    this.follower?.end();
    this.follower = null;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** Send `res` every event after number `after`, then follow the answer live. */
  follow(res: ServerResponse, after: number): void {
    clearTimeout(this.leftTimer);
    if (this.follower && this.follower !== res) this.follower.end();
    res.writeHead(200, {
      "content-type": "application/x-ndjson; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    });
    // A browser that is up to date has nothing to read yet, but must learn it is connected.
    res.flushHeaders();
    for (const line of this.lines.slice(Math.max(0, after))) res.write(line);
    if (this.ended) {
      res.end();
      return;
    }
    this.follower = res;
    res.on("close", () => {
      if (this.follower !== res || this.ended) return;
      this.follower = null;
      this.leftTimer = setTimeout(this.onLeft, this.graceMs).unref();
    });
  }
}

/** The relays of recent answers by id, each forgotten `keepMs` after its answer ended. */
export class AnswerRelays {
  private readonly byId = new Map<string, AnswerRelay>();

  constructor(
    private readonly graceMs: number,
    private readonly keepMs: number,
  ) {}

  open(onLeft: () => void): AnswerRelay {
    const relay = new AnswerRelay(this.graceMs, onLeft);
    this.byId.set(relay.id, relay);
    return relay;
  }

  get(id: string): AnswerRelay | undefined {
    return this.byId.get(id);
  }

  /** End the answer, and forget it once a browser could no longer need it. */
  close(relay: AnswerRelay): void {
    relay.end();
    setTimeout(() => this.byId.delete(relay.id), this.keepMs).unref();
  }
}
