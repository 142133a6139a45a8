import type { AddressInfo } from "node:net";
import type http from "node:http";
import { Writable } from "node:stream";
import { loadConfig } from "../../src/config/load.ts";
import { createApp } from "../../src/http/app.ts";
import { listen } from "../../src/http/server.ts";
import { buildRuntime, type RuntimeOverrides, type WorkerRuntime } from "../../src/runtime.ts";
import { createLogger } from "../../src/observability/logger.ts";

export const TEST_TOKEN = "test-secret-token";

export interface RunningService {
  readonly url: string;
  readonly runtime: WorkerRuntime;
  /** Every log line the service wrote, parsed. */
  readonly logs: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * Start the real service in this process on 127.0.0.1, port 0, with the fake model, the
 * shared token TEST_TOKEN and THREAD_QUEUE_TIMEOUT 0 unless `env` says otherwise. `env` values override the defaults;
 * pass `undefined` to remove a default.
 */
export async function startService(
  env: Record<string, string | undefined> = {},
  overrides: RuntimeOverrides = {},
): Promise<RunningService> {
  const config = loadConfig({
    USE_FAKE_MODEL: "true",
    AUTH_SECRET: TEST_TOKEN,
    LOG_LEVEL: "info",
    HOST: "127.0.0.1",
    PORT: "0",
    // The tests of a busy conversation expect its 409 at once; those of the wait (and of the 5 s
    // default) set their own.
    THREAD_QUEUE_TIMEOUT: "0",
    ...env,
  });
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger(config, sink);
  const runtime = await buildRuntime(config, { logger, ...overrides });
  const server: http.Server = await listen(createApp(runtime), config, logger, runtime.shortcuts);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    runtime,
    logs,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await runtime.close();
    },
  };
}

/** fetch with the bearer token and a JSON body. */
export async function call(
  service: { url: string },
  method: string,
  path: string,
  body?: unknown,
  token: string | null = TEST_TOKEN,
): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  return fetch(service.url + path, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
}
