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
    allowedHosts: [],
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
    CHAT_UI_ALLOWED_HOSTS: " Chat.Example.Test., [::1], 192.168.1.20,,chat.example.test ",
    MULTIMODAL_MAX_ATTACHMENTS: "3",
    CHAT_UI_MAX_UPLOAD_BYTES: "1000",
  });
  assert.deepEqual(config, {
    agenthostUrl: "https://agents.example.test:9443/base",
    authSecret: "s3cret",
    userId: "alice",
    host: "0.0.0.0",
    port: 9000,
    allowedHosts: ["chat.example.test", "::1", "192.168.1.20"],
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

test("CHAT_UI_ALLOWED_HOSTS takes names and addresses only: no scheme, port, path or wildcard", () => {
  assert.deepEqual(loadChatUiConfig({ CHAT_UI_ALLOWED_HOSTS: "fe80:0:0::1,my_host" }).allowedHosts, ["fe80::1", "my_host"]);
  assert.ok(Object.isFrozen(loadChatUiConfig({ CHAT_UI_ALLOWED_HOSTS: "a" }).allowedHosts));
  for (const entry of ["http://chat.example.test", "chat.example.test:8501", "chat.example.test/", "*.example.test", "*", "[chat]", "a b", "x".repeat(300), "ch\u00e4t"]) {
    assert.throws(
      () => loadChatUiConfig({ CHAT_UI_ALLOWED_HOSTS: `localhost,${entry}` }),
      (error: unknown) =>
        error instanceof ChatUiConfigError &&
        error.problems.length === 1 &&
        error.problems[0] === `CHAT_UI_ALLOWED_HOSTS has ${JSON.stringify(entry)}, which is not a host name (a name or address without scheme or port, e.g. chat.example.com)`,
      entry,
    );
  }
});
