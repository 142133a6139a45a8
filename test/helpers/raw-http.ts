import net from "node:net";

/** One HTTP response read off a raw socket. */
export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

/**
 * A raw TCP connection to the service, for what fetch cannot send: half-sent bodies, malformed
 * requests, a client that stops reading. Everything the server sends is kept in `received`.
 */
export class RawClient {
  readonly socket: net.Socket;
  private received = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  private ended = false;
  /** Resolves when the server (or the test) closed the connection. */
  readonly closed: Promise<void>;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.wake();
    });
    socket.on("error", () => {});
    this.closed = new Promise((resolve) =>
      socket.on("close", () => {
        this.ended = true;
        this.wake();
        resolve();
      }),
    );
  }

  static connect(url: string): Promise<RawClient> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => resolve(new RawClient(socket)));
      socket.once("error", reject);
    });
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Stop reading: the kernel buffers fill, then the server's writes back up. */
  stopReading(): void {
    this.socket.pause();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /**
   * The next complete response (status line, headers, a Content-Length or chunked body), or a
   * rejection after `timeoutMs` naming what was received so far.
   */
  async response(timeoutMs = 10_000): Promise<RawResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = this.parse();
      if (parsed) return parsed;
      if (this.ended) {
        throw new Error(`connection closed before a full response; received ${JSON.stringify(this.received.toString("latin1"))}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no full response within ${timeoutMs} ms; received ${JSON.stringify(this.received.toString("latin1"))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Take one response off the front of what was received, if it is all there. */
  private parse(): RawResponse | undefined {
    const end = this.received.indexOf("\r\n\r\n");
    if (end < 0) return undefined;
    const [statusLine = "", ...lines] = this.received.subarray(0, end).toString("latin1").split("\r\n");
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let rest = this.received.subarray(end + 4);
    let body: Buffer;
    if (headers["transfer-encoding"] === "chunked") {
      const chunks: Buffer[] = [];
      for (;;) {
        const lineEnd = rest.indexOf("\r\n");
        if (lineEnd < 0) return undefined;
        const size = parseInt(rest.subarray(0, lineEnd).toString("latin1"), 16);
        if (rest.length < lineEnd + 2 + size + 2) return undefined;
        chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
        rest = rest.subarray(lineEnd + 2 + size + 2);
        if (size === 0) break;
      }
      body = Buffer.concat(chunks);
    } else {
      const length = Number(headers["content-length"] ?? 0);
      if (rest.length < length) return undefined;
      body = rest.subarray(0, length);
      rest = rest.subarray(length);
    }
    this.received = rest;
    return { status, headers, body: body.toString("utf8") };
  }
}

/** Poll `check` until it holds (every 10 ms), or fail after `timeoutMs` saying what was awaited. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
