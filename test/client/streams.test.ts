// SSE and JSON Lines decoding against a scripted server: the happy paths, and every way a stream can
// fail (dropped before [DONE], malformed frame, error event, stall past streamTimeout, abort).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AgentClient, AgentClientError, type ChatMessage } from "../../src/client/index.ts";
import {
  aiMessage,
  drain,
  sendJson,
  sseFrame,
  startScriptedServer,
  startSse,
  type ScriptedServer,
} from "./scripted-server.ts";

let server: ScriptedServer;
const client = (options: { streamTimeout?: number } = {}) =>
  new AgentClient({ baseUrl: server.url, agent: "bot", authSecret: "s3cret", ...options });

before(async () => {
  server = await startScriptedServer();
});
after(() => server.close());

describe("SSE", () => {
  test("yields token text and complete messages, skipping keep-alives and unknown events", async () => {
    server.route("POST /bot/stream", (_req, res) => {
      startSse(res);
      res.write(": keep-alive\n\n");
      res.write(sseFrame({ type: "token", content: "This " }));
      res.write(sseFrame({ type: "custom_progress", content: {} }));
      res.write(sseFrame({ type: "token", content: "is" }));
      res.write(sseFrame({ type: "message", content: aiMessage("This is") }));
      res.end(sseFrame("[DONE]"));
    });
    const { items, error } = await drain(client().stream("hi", { thread_id: "t-1" }));
    assert.equal(error, undefined);
    assert.deepEqual(items.slice(0, 2), ["This ", "is"]);
    assert.equal(items.length, 3);
    assert.equal((items[2] as ChatMessage).content, "This is");
    const sent = server.requests.at(-1);
    assert.equal(sent?.headers.accept, "text/event-stream");
    assert.deepEqual(JSON.parse(sent?.body ?? ""), { input: { message: "hi" }, thread_id: "t-1", stream_tokens: true });
  });

  test("decodes frames split at any byte, CRLF line ends and multi-line data", async () => {
    const text =
      `data: ${JSON.stringify({ type: "token", content: "héllo 👋" })}\r\n\r\n` +
      `data: {"type": "message",\r\ndata: "content": ${JSON.stringify(aiMessage("héllo 👋"))}}\r\n\r\n` +
      "data: [DONE]\r\n\r\n";
    server.route("POST /bot/stream", async (_req, res) => {
      startSse(res);
      // One byte per write, each handed to the socket before the next (every split is in the unit tests).
      for (const byte of Buffer.from(text, "utf8")) {
        await new Promise<void>((resolve, reject) => res.write(Buffer.from([byte]), (error) => (error ? reject(error) : resolve())));
      }
      res.end();
    });
    const { items, error } = await drain(client().stream("hi"));
    assert.equal(error, undefined);
    assert.equal(items[0], "héllo 👋");
    assert.equal((items[1] as ChatMessage).content, "héllo 👋");
  });

  test("sends stream_tokens=false when asked", async () => {
    server.route("POST /bot/stream", (_req, res) => {
      startSse(res);
      res.end(sseFrame({ type: "message", content: aiMessage("whole") }) + sseFrame("[DONE]"));
    });
    const { items } = await drain(client().stream("hi", { stream_tokens: false }));
    assert.equal(items.length, 1);
    assert.equal(JSON.parse(server.requests.at(-1)?.body ?? "").stream_tokens, false);
  });

  test("a stream that ends before [DONE] raises after the items it did deliver", async () => {
    server.route("POST /bot/stream", (_req, res) => {
      startSse(res);
      res.end(sseFrame({ type: "token", content: "partial" }));
    });
    const { items, error } = await drain(client().stream("hi"));
    assert.deepEqual(items, ["partial"]);
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.kind, "protocol");
    assert.match(error.message, /ended before \[DONE\]/);
    assert.equal(error.statusCode, null);
  });

  test("a connection cut in the middle of a frame raises", async () => {
    let cut: (() => void) | undefined;
    server.route("POST /bot/stream", (_req, res) => {
      startSse(res);
      res.write(sseFrame({ type: "token", content: "a" }) + 'data: {"type": "tok');
      cut = () => res.destroy();
    });
    const items: unknown[] = [];
    let error: unknown;
    try {
      for await (const item of client().stream("hi")) {
        items.push(item);
        cut?.(); // the client has read the first frame and the start of the next one
      }
    } catch (caught) {
      error = caught;
    }
    assert.deepEqual(items, ["a"]);
    assert.ok(error instanceof AgentClientError);
    assert.ok(error.kind === "protocol" || error.kind === "network", error.message);
  });

  test("a frame that is not JSON raises a protocol error", async () => {
    server.route("POST /bot/stream", (_req, res) => {
      startSse(res);
      res.write(sseFrame({ type: "token", content: "ok" }));
      res.write("data: {not json\n\n");
      res.end(sseFrame("[DONE]"));
    });
    const { items, error } = await drain(client().stream("hi"));
    assert.deepEqual(items, ["ok"]);
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.kind, "protocol");
    assert.match(error.message, /malformed SSE frame \(not JSON\): \{not json/);
  });

  test("JSON without an event type, or a token that is not text, is malformed too", async () => {
    for (const bad of [[1, 2], { content: "x" }, { type: "token", content: 5 }, { type: "message", content: "x" }]) {
      server.route("POST /bot/stream", (_req, res) => {
        startSse(res);
        res.end(sseFrame(bad) + sseFrame("[DONE]"));
      });
      const { error } = await drain(client().stream("hi"));
      assert.ok(error instanceof AgentClientError, JSON.stringify(bad));
      assert.equal(error.kind, "protocol");
    }
  });

  test("an error event raises with its description and error_code", async () => {
    server.route("POST /bot/stream", (_req, res) => {
      startSse(res);
      res.write(sseFrame({ type: "token", content: "x" }));
      res.write(sseFrame({ type: "error", content: "Model credentials rejected.", error_code: "model_authentication_failed" }));
      res.end(sseFrame("[DONE]"));
    });
    const { items, error } = await drain(client().stream("hi"));
    assert.deepEqual(items, ["x"]);
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.kind, "event");
    assert.equal(error.errorCode, "model_authentication_failed");
    assert.equal(error.statusCode, null);
    assert.equal(error.detail, "Model credentials rejected.");
    assert.match(error.message, /Model credentials rejected\./);
  });

  test("an HTTP failure before the stream starts raises on the first iteration", async () => {
    server.route("POST /bot/stream", (_req, res) =>
      sendJson(res, 503, { detail: "busy", error_code: "service_busy" }, { "retry-after": "1" }),
    );
    const { items, error } = await drain(client().stream("hi"));
    assert.deepEqual(items, []);
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.statusCode, 503);
    assert.equal(error.errorCode, "service_busy");
    assert.equal(error.retryAfter, "1");
  });

  test("silence longer than streamTimeout raises a timeout and closes the connection", async () => {
    let closed: Promise<void> | undefined;
    server.route("POST /bot/stream", (req, res) => {
      closed = req.closed;
      startSse(res);
      res.write(sseFrame({ type: "token", content: "first" }));
      // then nothing at all
    });
    const started = Date.now();
    const { items, error } = await drain(client({ streamTimeout: 150 }).stream("hi"));
    const elapsed = Date.now() - started;
    assert.deepEqual(items, ["first"]);
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.kind, "timeout");
    assert.match(error.message, /silent for 150 ms/);
    assert.ok(elapsed >= 140 && elapsed < 2000, `elapsed ${elapsed} ms`);
    await closed;
  });

  test("an AbortSignal cancels a running stream with the signal's reason", async () => {
    let closed: Promise<void> | undefined;
    server.route("POST /bot/stream", (req, res) => {
      closed = req.closed;
      startSse(res);
      res.write(sseFrame({ type: "token", content: "one" }));
    });
    const controller = new AbortController();
    const seen: unknown[] = [];
    await assert.rejects(
      (async () => {
        for await (const item of client().stream("hi", { signal: controller.signal })) {
          seen.push(item);
          controller.abort();
        }
      })(),
      (error: unknown) => error instanceof Error && error.name === "AbortError",
    );
    assert.deepEqual(seen, ["one"]);
    await closed;
  });

  test("breaking out of the loop closes the connection", async () => {
    let closed: Promise<void> | undefined;
    server.route("POST /bot/stream", (req, res) => {
      closed = req.closed;
      startSse(res);
      res.write(sseFrame({ type: "token", content: "one" }));
    });
    for await (const item of client().stream("hi")) {
      assert.equal(item, "one");
      break;
    }
    await closed;
  });
});

describe("JSON Lines", () => {
  test("yields tokens and messages; a clean end without a marker is the end", async () => {
    server.route("POST /bot/stream/jsonl", (_req, res) => {
      res.writeHead(200, { "content-type": "application/jsonl" });
      res.write(JSON.stringify({ type: "token", content: "Hi" }) + "\n\n");
      res.end(JSON.stringify({ type: "message", content: aiMessage("Hi") })); // no trailing newline
    });
    const { items, error } = await drain(client().streamJsonl("hi", { user_id: "u" }));
    assert.equal(error, undefined);
    assert.equal(items[0], "Hi");
    assert.equal((items[1] as ChatMessage).run_id, "run-1");
    assert.equal(JSON.parse(server.requests.at(-1)?.body ?? "").user_id, "u");
  });

  test("a line that is not JSON raises a protocol error", async () => {
    server.route("POST /bot/stream/jsonl", (_req, res) => {
      res.writeHead(200, { "content-type": "application/jsonl" });
      res.end(`${JSON.stringify({ type: "token", content: "Hi" })}\ndata: {"type":"token"}\n`);
    });
    const { items, error } = await drain(client().streamJsonl("hi"));
    assert.deepEqual(items, ["Hi"]);
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.kind, "protocol");
    assert.match(error.message, /malformed JSON Lines frame/);
  });

  test("an error event raises", async () => {
    server.route("POST /bot/stream/jsonl", (_req, res) => {
      res.writeHead(200, { "content-type": "application/jsonl" });
      res.end(`${JSON.stringify({ type: "error", content: "boom" })}\n`);
    });
    const { error } = await drain(client().streamJsonl("hi"));
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.kind, "event");
    assert.equal(error.errorCode, null);
  });

  test("silence longer than streamTimeout raises a timeout", async () => {
    server.route("POST /bot/stream/jsonl", (_req, res) => {
      res.writeHead(200, { "content-type": "application/jsonl" });
      res.flushHeaders();
    });
    const { error } = await drain(client({ streamTimeout: 100 }).streamJsonl("hi"));
    assert.ok(error instanceof AgentClientError);
    assert.equal(error.kind, "timeout");
  });
});
