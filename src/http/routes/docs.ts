import { createRequire } from "node:module";
import path from "node:path";
import express, { Router } from "express";
import { ApiError } from "../api-error.ts";
import { buildOpenApiDocument } from "../openapi.ts";
import { scopeOf } from "../request-scope.ts";

const swaggerAssets = path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>agenthost API reference</title>
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
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

/** How long a browser may keep the reference's files and the (empty) favicon answer. */
const STATIC_MAX_AGE_SECONDS = 3600;

/**
 * `/` (a pointer to the rest), /openapi.json, the interactive /docs page and its files, and
 * /favicon.ico (204: no icon, asked for by every browser); public, they describe the API and hold
 * no data. A path under /docs that is none of these is answered 404 here, without a token: nothing
 * else lives there ("docs" is no agent's name).
 */
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
  router.get("/favicon.ico", (_req, res) => {
    res.set("Cache-Control", `public, max-age=${STATIC_MAX_AGE_SECONDS}`).status(204).end();
  });
  router.use(
    "/docs/assets",
    (_req, res, next) => {
      // One label for every file (and every missing one): the file's name never becomes a metric label.
      scopeOf(res).route = "/docs/assets";
      next();
    },
    express.static(swaggerAssets, { index: false, maxAge: STATIC_MAX_AGE_SECONDS * 1000 }),
  );
  router.use("/docs", () => {
    throw new ApiError("not_found");
  });
  return router;
}
