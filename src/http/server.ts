import http from "node:http";
import type { Express } from "express";
import type { Config } from "../config/schema.ts";

/** Above the idle timeout of common load balancers (AWS ALB 60 s, GCP 600 s is configurable). */
export const KEEP_ALIVE_TIMEOUT_MS = 75_000;
/** Must exceed the keep-alive timeout, or Node may cut a connection a balancer still trusts. */
export const HEADERS_TIMEOUT_MS = 80_000;

/** Listen on HOST:PORT; resolves once the port is bound. */
export function listen(app: Express, config: Pick<Config, "HOST" | "PORT">): Promise<http.Server> {
  const server = http.createServer(app);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  // The request deadline is the service's own (REQUEST_TIMEOUT); Node's must not cut streams first.
  server.requestTimeout = 0;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.PORT, config.HOST, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}
