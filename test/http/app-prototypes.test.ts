// With the expressPrototypes shortcut, requests and responses reach the app with its own prototypes
// already, made by subclasses of Node's own (src/http/server.ts), so Express's per-request
// Object.setPrototypeOf changes nothing: changing a live object's prototype made every scavenge keep
// the requests' garbage alive. Without it, Node's own objects, as Express expects: the same answers.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import express from "express";
import { listen } from "../../src/http/server.ts";

function echoApp() {
  const app = express();
  app.post("/echo", express.json(), (req, res) => {
    res.status(201).json({ got: req.body, path: req.path, type: req.get("content-type") });
  });
  return app;
}

const settings = { HOST: "127.0.0.1", PORT: 0, REQUEST_BODY_TIMEOUT: 5, REQUEST_TIMEOUT: 10 };

test("with the shortcut, the server makes requests and responses with the app's prototypes; Express's handling is unchanged", async () => {
  const app = echoApp();
  const server = await listen(app, settings, undefined, { expressPrototypes: true });
  const seen: Array<[boolean, boolean]> = [];
  // Before the app: what the server made, before Express touched it.
  server.prependListener("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    seen.push([Object.getPrototypeOf(req) === app.request, Object.getPrototypeOf(res) === app.response]);
  });
  try {
    const { port } = server.address() as AddressInfo;
    const answer = await fetch(`http://127.0.0.1:${port}/echo`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"a":1}' });
    assert.equal(answer.status, 201);
    assert.deepEqual(await answer.json(), { got: { a: 1 }, path: "/echo", type: "application/json" });
    assert.deepEqual(seen, [[true, true]]);
    // Made by subclasses of Node's own, not by functions given a prototype (which V8 treats like a changed one).
    assert.equal(Object.getPrototypeOf((app.request as object).constructor), http.IncomingMessage);
    assert.equal(Object.getPrototypeOf((app.response as object).constructor), http.ServerResponse);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("without the shortcut (the default), Node's own requests and responses reach Express, which gives them its prototypes: the same answer", async () => {
  const app = echoApp();
  const ownRequest = app.request;
  const server = await listen(app, settings);
  const seen: Array<[boolean, boolean]> = [];
  server.prependListener("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    seen.push([Object.getPrototypeOf(req) === http.IncomingMessage.prototype, Object.getPrototypeOf(res) === http.ServerResponse.prototype]);
  });
  server.on("request", (req: http.IncomingMessage) => seen.push([Object.getPrototypeOf(req) === app.request, true]));
  try {
    const { port } = server.address() as AddressInfo;
    const answer = await fetch(`http://127.0.0.1:${port}/echo`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"a":1}' });
    assert.equal(answer.status, 201);
    assert.deepEqual(await answer.json(), { got: { a: 1 }, path: "/echo", type: "application/json" });
    assert.deepEqual(seen, [[true, true], [true, true]], "Node's objects, then Express's prototypes once Express took them");
    assert.equal(app.request, ownRequest, "the app's prototypes are its own");
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
