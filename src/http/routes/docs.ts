import { createRequire } from "node:module";
import path from "node:path";
import express, { Router } from "express";
import { buildOpenApiDocument } from "../openapi.ts";

const swaggerAssets = path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>agenthost API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`;

const init = `window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#reference", deepLinking: true });`;

/** What `GET /` answers: where to read on. Public, like the reference; it holds no data. */
export const ROOT_POINTER = Object.freeze({
  service: "agenthost",
  docs: "/docs",
  openapi: "/openapi.json",
  info: "/info",
  health: "/health/ready",
  auth: "every route but /, /docs, /openapi.json and /health/* needs Authorization: Bearer <token>",
});

/** `/` (a pointer to the rest), /openapi.json and the interactive /docs page; public, they describe the API and hold no data. */
export function docsRoutes(): Router {
  const document = JSON.stringify(buildOpenApiDocument());
  const router = Router();
  router.get("/", (_req, res) => {
    res.json(ROOT_POINTER);
  });
  router.get("/openapi.json", (_req, res) => {
    res.type("application/json").send(document);
  });
  router.get("/docs", (_req, res) => {
    res.type("html").send(page);
  });
  router.get("/docs/init.js", (_req, res) => {
    res.type("application/javascript").send(init);
  });
  router.use("/docs/assets", express.static(swaggerAssets, { index: false, maxAge: "1h" }));
  return router;
}
