import http from "node:http";
import type { Duplex } from "node:stream";
import type { Express } from "express";
import { NO_SHORTCUTS, type ActiveShortcuts } from "../config/library-shortcuts.ts";
import type { Config } from "../config/schema.ts";
import { ApiError } from "./api-error.ts";
import type { Logger } from "../observability/logger.ts";
import { requestReadTimeoutMs } from "./middleware/body-deadline.ts";

/** Above the idle timeout of common load balancers (AWS ALB 60 s, GCP 600 s is configurable). */
export const KEEP_ALIVE_TIMEOUT_MS = 75_000;
/**
 * Node's whole-request timeout backs up the service's own body deadline (bodyDeadline middleware),
 * this much later, so the service's 408 (logged, counted) wins whenever the app still watches the
 * request. Node's catches the rest: a request answered before its body arrived, then abandoned.
 */
const BACKSTOP_MARGIN_MS = 1_000;

/** The catalogue entry for what Node's HTTP parser refused (see Node's own socketOnError). */
function parserFailure(code: string | undefined): ApiError {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return new ApiError("headers_too_large");
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new ApiError("payload_too_large", { detail: "The request's chunk extensions are too large." });
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new ApiError("request_body_timeout");
    default:
      return new ApiError("bad_request");
  }
}

/** A whole HTTP/1.1 response carrying an ApiError's JSON body, for a socket no ServerResponse owns. */
export function rawErrorResponse(error: ApiError): string {
  const body = JSON.stringify(error.toBody());
  const headers: Record<string, string | number> = {
    ...error.headers,
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
    Connection: "close",
  };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${error.status} ${http.STATUS_CODES[error.status] ?? ""}\r\n${head.join("")}\r\n${body}`;
}

/**
 * Node's parser refused the request (malformed, headers too large, or it did not arrive in time):
 * answer with our JSON error body and close, as Node would with its bare one. A connection that is
 * gone, or whose response has already started, is only closed.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, logger: Logger | undefined): void {
  // Node's own handler makes the same check: never write into a response that has started.
  const inFlight = (socket as { _httpMessage?: http.ServerResponse | null })._httpMessage;
  if (error.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const apiError = parserFailure(error.code);
  logger?.info({ code: error.code, status: apiError.status }, "request refused by the HTTP parser");
  socket.end(rawErrorResponse(apiError), () => socket.destroy());
}

/** Only `Expect: 100-continue` is supported; any other expectation is 417 with our JSON body. */
function refuseExpectation(_req: http.IncomingMessage, res: http.ServerResponse): void {
  const error = new ApiError("expectation_failed");
  const body = JSON.stringify(error.toBody());
  res
    .writeHead(error.status, {
      "Content-Type": "application/json; charset=utf-8",
      "Content-Length": Buffer.byteLength(body),
      Connection: "close",
    })
    .end(body);
}

/**
 * Requests and responses made with the app's own prototypes from the start. Express gives every
 * request and response its prototypes (`app.request`, `app.response`) with Object.setPrototypeOf
 * when it takes them, and changing a live object's prototype is costly in V8 beyond the call: in a
 * bare node:http server, that one call per request made every scavenge keep the requests' garbage
 * alive and promote it (0.15 ms scavenges became 4 ms, the heap grew between mark-compacts), and
 * objects built by a plain function whose `prototype` is Express's did the same. Objects of a
 * class do not: here each is made by a subclass of Node's own, whose prototype is put in front of
 * Express's once, and the app is given that prototype as its own, so Express's per-request call
 * finds it already in place and changes nothing. This relies on how Express 5 sets prototypes (its
 * `app.request` and `app.response`, and its per-request Object.setPrototypeOf): the expressPrototypes
 * shortcut (src/config/library-shortcuts.ts), taken only at the Express version it was written for.
 */
function appMessages(app: Express): Pick<http.ServerOptions, "IncomingMessage" | "ServerResponse"> {
  class AppRequest extends http.IncomingMessage {}
  class AppResponse extends http.ServerResponse {}
  Object.setPrototypeOf(AppRequest.prototype, app.request);
  Object.setPrototypeOf(AppResponse.prototype, app.response);
  app.request = AppRequest.prototype as typeof app.request;
  app.response = AppResponse.prototype as typeof app.response;
  return { IncomingMessage: AppRequest, ServerResponse: AppResponse as typeof http.ServerResponse };
}

/**
 * HTTP/1.1 pipelining: Node parses every request a client sends ahead on one connection and hands
 * each to the app at once, though their answers go out in order (each waits in Node's queue until
 * the one before it has been written). Passed on at once, each would take a worker slot while it
 * waits, so one connection could fill a worker, and the rest of its requests would be refused. A
 * request whose answer is queued (Node gives the response its socket only when its turn comes) is
 * held until then instead, so a connection takes at most one slot at a time; it goes on at the
 * next turn of the event loop, once the answer before it has closed and released its slot. A held
 * request does nothing and counts nowhere; if the client leaves first, it is dropped with the
 * connection. Its body is read at its turn, while Node's request timeout counts from its first
 * byte (docs/operations.md, Pipelined requests). The common case, one request at a time, costs one
 * property check.
 */
function oneRequestPerConnection(app: Express): http.RequestListener {
  return (req, res) => {
    if (res.socket !== null) app(req, res);
    else res.once("socket", () => setImmediate(() => app(req, res)));
  };
}

/**
 * Listen on HOST:PORT; resolves once the port is bound. Reading a request (headers and body) is
 * bounded by REQUEST_BODY_TIMEOUT (at most REQUEST_TIMEOUT); once a request has arrived, Node's
 * timeouts no longer apply to it, and its response takes as long as REQUEST_TIMEOUT allows. With
 * the expressPrototypes shortcut on, the server makes requests and responses with the app's
 * prototypes (appMessages, which re-points the app's); off (the default), Node's own, as Express expects.
 */
export function listen(
  app: Express,
  config: Pick<Config, "HOST" | "PORT" | "REQUEST_BODY_TIMEOUT" | "REQUEST_TIMEOUT">,
  logger?: Logger,
  shortcuts: Pick<ActiveShortcuts, "expressPrototypes"> = NO_SHORTCUTS,
): Promise<http.Server> {
  const bodyTimeoutMs = requestReadTimeoutMs(config);
  const server = http.createServer(
    {
      ...(shortcuts.expressPrototypes ? appMessages(app) : {}),
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      // Counted from a request's first byte, so idle keep-alive time never runs into it.
      headersTimeout: Math.ceil(bodyTimeoutMs),
      requestTimeout: Math.ceil(bodyTimeoutMs + BACKSTOP_MARGIN_MS),
      // How often Node checks those two; its default (30 s) would let a short timeout run far over.
      connectionsCheckingInterval: Math.ceil(Math.min(1_000, Math.max(10, bodyTimeoutMs / 4))),
    },
    oneRequestPerConnection(app),
  );
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => answerClientError(error, socket, logger));
  server.on("checkExpectation", refuseExpectation);
  // CONNECT (a proxy tunnel) is not something this service does: 405 with our JSON body, not a bare close.
  server.on("connect", (_req: http.IncomingMessage, socket: Duplex) => {
    const error = new ApiError("method_not_allowed", { detail: "CONNECT is not supported.", headers: { Allow: "GET, HEAD, POST, DELETE" } });
    socket.end(rawErrorResponse(error), () => socket.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.PORT, config.HOST, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}
