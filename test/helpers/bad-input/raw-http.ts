import net from "node:net";

/**
 * One HTTP/1.1 exchange over a raw socket, so a request can carry exactly the bytes a hostile
 * client would send (bad percent-encoding, odd methods, invalid header values, broken framing),
 * none of which fetch or http.request would let through.
 */
export interface RawRequest {
  readonly method: string;
  /** The request target exactly as sent: path and query, no escaping added. */
  readonly target: string;
  /** Header lines in order, sent as latin1 bytes. Host and Connection are added unless present. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body?: Buffer;
  /** Add Content-Length for the body (default true; false leaves framing to `headers`). */
  readonly contentLength?: boolean;
  /** The protocol token of the request line (default HTTP/1.1). */
  readonly version?: string;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

export type RawOutcome =
  | { readonly kind: "response"; readonly response: RawResponse; readonly ms: number }
  /** Nothing complete arrived before the deadline. */
  | { readonly kind: "hung"; readonly ms: number; readonly partial: string }
  /** The connection ended (or failed) without a complete response. */
  | { readonly kind: "closed"; readonly ms: number; readonly partial: string; readonly error?: string };

const CRLF = "\r\n";

export function encodeRequest(request: RawRequest, host: string): Buffer {
  const lines = [`${request.method} ${request.target} ${request.version ?? "HTTP/1.1"}`];
  const names = new Set(request.headers.map(([name]) => name.toLowerCase()));
  if (!names.has("host")) lines.push(`Host: ${host}`);
  if (!names.has("connection")) lines.push("Connection: close");
  for (const [name, value] of request.headers) lines.push(`${name}: ${value}`);
  if (request.body && request.contentLength !== false) lines.push(`Content-Length: ${request.body.length}`);
  const head = Buffer.from(lines.join(CRLF) + CRLF + CRLF, "latin1");
  return request.body ? Buffer.concat([head, request.body]) : head;
}

/** A chunked body decoded, or undefined while it is incomplete. */
function dechunk(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf(CRLF, at, "latin1");
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(data.subarray(at, lineEnd).toString("latin1").split(";")[0]!.trim(), 16);
    if (!Number.isFinite(size)) return undefined;
    const start = lineEnd + 2;
    if (size === 0) {
      // The last chunk; trailers (none expected) end with an empty line.
      return data.indexOf(CRLF + CRLF, lineEnd, "latin1") >= 0 || data.length >= start + 2 ? Buffer.concat(parts) : undefined;
    }
    if (data.length < start + size + 2) return undefined;
    parts.push(data.subarray(start, start + size));
    at = start + size + 2;
  }
}

/**
 * The first complete response in `data`, if there is one. A 100 Continue interim response is
 * skipped. `ended`: the connection closed, so a body without framing ends here.
 */
export function parseResponse(data: Buffer, ended: boolean, method: string): RawResponse | undefined {
  let offset = 0;
  for (;;) {
    const headEnd = data.indexOf(CRLF + CRLF, offset, "latin1");
    if (headEnd < 0) return undefined;
    const [statusLine, ...headerLines] = data.subarray(offset, headEnd).toString("latin1").split(CRLF);
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "");
    if (!match) return undefined;
    const status = Number(match[1]);
    const headers: Record<string, string> = {};
    for (const line of headerLines) {
      const colon = line.indexOf(":");
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const rest = data.subarray(headEnd + 4);
    if (status >= 100 && status < 200) {
      offset = headEnd + 4;
      continue;
    }
    if (method === "HEAD" || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) };
    if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      const body = dechunk(rest);
      return body ? { status, headers, body } : undefined;
    }
    const length = headers["content-length"];
    if (length !== undefined) {
      const n = Number(length);
      return rest.length >= n ? { status, headers, body: rest.subarray(0, n) } : undefined;
    }
    return ended ? { status, headers, body: rest } : undefined;
  }
}

/** Send `request` to 127.0.0.1:`port` and wait up to `timeoutMs` for its complete response. */
export function exchange(port: number, request: RawRequest, timeoutMs: number): Promise<RawOutcome> {
  const bytes = encodeRequest(request, `127.0.0.1:${port}`);
  const started = performance.now();
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const socket = net.connect({ host: "127.0.0.1", port });
    const elapsed = () => Math.round(performance.now() - started);
    const partial = () => Buffer.concat(chunks).subarray(0, 300).toString("latin1");
    const finish = (outcome: RawOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ kind: "hung", ms: elapsed(), partial: partial() }), timeoutMs);
    socket.on("connect", () => {
      // The server may answer and close before the whole body is written (413, 401): not an error.
      socket.write(bytes, () => {});
    });
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      const response = parseResponse(Buffer.concat(chunks), false, request.method);
      if (response) finish({ kind: "response", response, ms: elapsed() });
    });
    const onEnd = (error?: Error) => {
      const response = parseResponse(Buffer.concat(chunks), true, request.method);
      if (response) finish({ kind: "response", response, ms: elapsed() });
      else finish({ kind: "closed", ms: elapsed(), partial: partial(), ...(error ? { error: error.message } : {}) });
    };
    socket.on("end", () => onEnd());
    socket.on("close", () => onEnd());
    socket.on("error", (error) => {
      // A reset after a complete response still counts as that response.
      onEnd(error);
    });
  });
}
