// The chat page's own settings: defaults, parsing, and every bad value reported at once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatUiConfigError, loadChatUiConfig } from "../../src/config/chat-ui.ts";

test("defaults: agenthost on 127.0.0.1:8080, the page on 127.0.0.1:8501, no token, no user", () => {
  assert.deepEqual(loadChatUiConfig({}), {
    agenthostUrl: "http://127.0.0.1:8080",
    authSecret: undefined,
    userId: undefined,
    host: "127.0.0.1",
    port: 8501,
    maxAttachments: undefined,
    maxUploadBytes: 10 * 1024 * 1024,
  });
});

test("reads every variable; empty strings count as unset", () => {
  const config = loadChatUiConfig({
    AGENTHOST_URL: "https://agents.example.test:9443/base",
    AUTH_SECRET: "s3cret",
    CHAT_UI_USER_ID: "alice",
    CHAT_UI_HOST: "0.0.0.0",
    CHAT_UI_PORT: "9000",
    MULTIMODAL_MAX_ATTACHMENTS: "3",
    CHAT_UI_MAX_UPLOAD_BYTES: "1000",
  });
  assert.deepEqual(config, {
    agenthostUrl: "https://agents.example.test:9443/base",
    authSecret: "s3cret",
    userId: "alice",
    host: "0.0.0.0",
    port: 9000,
    maxAttachments: 3,
    maxUploadBytes: 1000,
  });
  assert.ok(Object.isFrozen(config));
  assert.equal(loadChatUiConfig({ AUTH_SECRET: " ", CHAT_UI_PORT: "" }).authSecret, undefined);
});

test("bad values are all reported in one error", () => {
  assert.throws(
    () => loadChatUiConfig({ AGENTHOST_URL: "ftp://x", CHAT_UI_PORT: "eighty" }),
    (error: unknown) =>
      error instanceof ChatUiConfigError &&
      error.problems.length === 2 &&
      error.problems[0]?.startsWith("AGENTHOST_URL ") === true &&
      error.problems[1]?.startsWith("CHAT_UI_PORT ") === true,
  );
  assert.throws(() => loadChatUiConfig({ CHAT_UI_PORT: "70000" }), /CHAT_UI_PORT must be at most 65535/);
});
