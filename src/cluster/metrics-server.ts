import http from "node:http";
import type { Logger } from "../observability/logger.ts";
import { METRICS_CONTENT_TYPE } from "../observability/metrics.ts";

/**
 * The primary's Prometheus endpoint: `GET /metrics` on METRICS_PORT, nothing else. Rendering asks
 * every worker for its figures, so each scrape is a fresh, cluster-wide reading.
 */
export function startMetricsServer(
  host: string,
  port: number,
  render: () => Promise<string>,
  logger: Logger,
): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    render().then(
      (text) => res.writeHead(200, { "content-type": METRICS_CONTENT_TYPE }).end(req.method === "HEAD" ? undefined : text),
      (error: unknown) => {
        logger.error({ err: error }, "metrics collection failed");
        res.writeHead(500, { "content-type": "text/plain" }).end("metrics collection failed\n");
      },
    );
  });
  server.keepAliveTimeout = 75_000;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}
