// The chat page in a real browser (Debian's Chromium driven by playwright-core) against the real
// agenthost with the fake model: send a message and watch the streamed answer, reload and see the
// conversation restored, start a new chat, give feedback, see 409 and 503 shown as errors, and check
// that neither the page nor anything on the network carries the token or the user id.
// Token mode is used so that runs carry a feedback proof, which must stay in the page's server too.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { storageKey } from "../../src/auth/storage-key.ts";
import { startChatServer } from "../../src/ui/server.ts";
import { startService, type RunningService } from "../helpers/service.ts";
import { INFO, sendJson, sseFrame, startScriptedServer, startSse } from "../client/scripted-server.ts";

const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const FAKE = "This is a test response from the fake model.";
const TOKEN = "chat-ui-secret-7f3a9c51";
const USER = "chat-ui-user-42b1";
const ARTIFACTS = new URL("../artifacts/", import.meta.url);

let service: RunningService;
let chat: { url: string; close(): Promise<void> };
let context: BrowserContext;
let profile: string;

before(async () => {
  service = await startService({
    AUTH_MODE: "token",
    AUTH_SECRET: undefined,
    AUTH_USERS: JSON.stringify({ [USER]: TOKEN }),
    FEEDBACK_SIGNING_SECRET: "feedback-signing-secret-for-the-browser-test",
  });
  chat = await startChatServer({ agenthostUrl: service.url, authSecret: TOKEN, userId: USER, host: "127.0.0.1", port: 0 });
  if (!existsSync(CHROMIUM)) return;
  profile = await mkdtemp(join(tmpdir(), "chat-page-profile-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1000, height: 760 },
  });
});

after(async () => {
  await context?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
  await chat?.close();
  await service?.close();
});

/** Everything the browser sends or receives: URLs, headers, bodies. */
type NetworkLog = { url: string; text: string }[];

function record(page: Page, network: NetworkLog): void {
  page.on("request", (request) => {
    const text = `> ${request.method()} ${request.url()} ${JSON.stringify(request.headers())} ${request.postData() ?? ""}`;
    network.push({ url: request.url(), text });
  });
  page.on("response", async (response) => {
    // DevTools does not keep streamed bodies; /api/chat bodies are teed inside the page (TEE_CHAT).
    const streamed = new URL(response.url()).pathname === "/api/chat";
    const body = streamed ? "" : await response.text().catch((error: unknown) => `(body unavailable: ${String(error)})`);
    const text = `< ${response.status()} ${response.url()} ${JSON.stringify(await response.allHeaders())} ${body}`;
    network.push({ url: response.url(), text });
  });
}

interface TeeWindow {
  chatBodies: string[];
}

/**
 * Runs in the page before its own script: keeps a copy of every /api/chat body as it streams in, so
 * the test can read what the browser received (DevTools cannot return streamed bodies).
 */
function teeChat(): void {
  const original = window.fetch.bind(window);
  const bodies: string[] = [];
  (window as unknown as TeeWindow).chatBodies = bodies;
  window.fetch = async (input, init) => {
    const response = await original(input, init);
    if (!String(input).endsWith("/api/chat") || !response.body) return response;
    const [forPage, forTest] = response.body.tee();
    const index = bodies.push("") - 1;
    void (async () => {
      const reader = forTest.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bodies[index] += decoder.decode(value, { stream: true });
      }
    })();
    return new Response(forPage, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

const idle = (page: Page) => page.waitForSelector("body[data-state=idle]");

/** Type a message, press Enter, and wait until the page has handled the whole answer. */
async function send(page: Page, text: string): Promise<string> {
  await page.fill("#input", text);
  const answered = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/chat");
  await page.press("#input", "Enter");
  await answered;
  await idle(page);
  await page.waitForFunction(() => /"type":"(done|error)"/.test((window as unknown as TeeWindow).chatBodies.at(-1) ?? ""));
  return page.evaluate(() => (window as unknown as TeeWindow).chatBodies.at(-1) ?? "");
}

const browserSkip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed`;

test("the chat page in Chromium against agenthost", { skip: browserSkip }, async (t) => {
  const page = await context.newPage();
  await page.addInitScript(teeChat);
  page.setDefaultTimeout(10_000);
  const network: NetworkLog = [];
  record(page, network);
  const sources: string[] = [];
  let firstThread = "";

  await t.test("loads the agents from /info", async () => {
    await page.goto(chat.url);
    await idle(page);
    const options = await page.$$eval("#agent option", (nodes) => nodes.map((n) => (n as HTMLOptionElement).value));
    assert.ok(options.includes("chatbot-agent") && options.includes("create-agent"), options.join());
    assert.equal(await page.inputValue("#agent"), "chatbot-agent");
  });

  await t.test("sends a message and shows the streamed answer as Markdown with feedback buttons", async () => {
    const events = await send(page, "Hello from the browser");
    assert.equal(await page.textContent(".msg.human"), "Hello from the browser");
    const answer = page.locator(".msg.ai").last();
    assert.equal(await answer.locator("p").textContent(), FAKE);
    assert.equal(await answer.locator(".feedback-up").count(), 1);
    assert.equal(await page.isHidden("#error"), true);
    // The answer arrived as tokens first, then as the complete message.
    const types = events.trim().split("\n").map((line) => (JSON.parse(line) as { type: string }).type);
    assert.equal(types[0], "thread");
    assert.ok(types.filter((type) => type === "token").length > 1, `tokens were streamed: ${types.join()}`);
    assert.deepEqual(types.slice(-2), ["message", "done"]);
    const url = new URL(page.url());
    assert.equal(url.searchParams.get("agent"), "chatbot-agent");
    firstThread = url.searchParams.get("thread_id") ?? "";
    assert.match(firstThread, /^[0-9a-f-]{36}$/);
    assert.deepEqual([...url.searchParams.keys()].sort(), ["agent", "thread_id"]);
    sources.push(await page.content());
  });

  await t.test("gives thumbs-up feedback on the answer", async () => {
    await page.locator(".msg.ai .feedback-up").last().click();
    await page.waitForSelector(".feedback[data-sent='1']");
    assert.equal(await page.isHidden("#error"), true);
    assert.match((await page.textContent(".feedback-note")) ?? "", /Thanks/);
  });

  await t.test("reloading the URL restores the conversation from history", async () => {
    await page.reload();
    await idle(page);
    await page.waitForSelector(".msg.ai");
    assert.equal(await page.textContent(".msg.human"), "Hello from the browser");
    assert.equal(await page.locator(".msg.ai p").first().textContent(), FAKE);
    assert.equal(new URL(page.url()).searchParams.get("thread_id"), firstThread);
    sources.push(await page.content());
  });

  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: new URL("chat-page.png", ARTIFACTS).pathname, fullPage: true });

  await t.test("a conversation busy with another request shows a 409 error", async () => {
    const outcome = await service.runtime.locks.acquire(storageKey(USER, "chatbot-agent", firstThread));
    assert.ok(outcome.ok);
    try {
      await send(page, "Are you busy?");
      await page.waitForSelector("#error:not([hidden])");
      assert.equal(await page.getAttribute("#error", "data-status"), "409");
      assert.match((await page.textContent("#error")) ?? "", /busy with another request/);
    } finally {
      await outcome.lease.release();
    }
  });

  await t.test("starts a new chat with a new thread", async () => {
    await page.click("#new-chat");
    assert.equal(await page.locator("#messages > *").count(), 0);
    assert.equal(await page.isHidden("#error"), true);
    assert.equal(new URL(page.url()).searchParams.get("thread_id"), null);
    await send(page, "A second conversation");
    await page.waitForSelector(".msg.ai .feedback-up");
    const thread = new URL(page.url()).searchParams.get("thread_id");
    assert.ok(thread && thread !== firstThread);
    assert.equal(await page.locator(".msg.human").count(), 1);
    sources.push(await page.content());
  });

  await t.test("a full service shows a 503 error with its Retry-After", async () => {
    const held: (() => void)[] = [];
    for (let release = await service.runtime.admission.acquire(); release; release = await service.runtime.admission.acquire()) {
      held.push(release);
    }
    try {
      await send(page, "Anyone there?");
      await page.waitForSelector("#error:not([hidden])");
      assert.equal(await page.getAttribute("#error", "data-status"), "503");
      assert.match((await page.textContent("#error")) ?? "", /503.*Retry after 1 s/);
    } finally {
      for (const release of held) release();
    }
    await page.screenshot({ path: new URL("chat-page-503.png", ARTIFACTS).pathname, fullPage: true });
  });

  await t.test("neither the page nor the network log ever carries the token, the user id or a feedback proof", async () => {
    const raw = await Promise.all(
      ["/", "/app.js", "/markdown.js", "/style.css"].map(async (path) => (await fetch(chat.url + path)).text()),
    );
    sources.push(await page.content(), ...raw);
    assert.ok(network.length > 5, "the network log recorded the session");
    const chatBodies = await page.evaluate(() => (window as unknown as TeeWindow).chatBodies);
    assert.ok(chatBodies.length > 0);
    for (const text of [...sources, ...network.map((entry) => entry.text), ...chatBodies]) {
      assert.ok(!text.includes(TOKEN), `the token leaked into: ${text.slice(0, 200)}`);
      assert.ok(!text.includes(USER), `the user id leaked into: ${text.slice(0, 200)}`);
      assert.ok(!text.includes("feedback_token"), `a feedback proof leaked into: ${text.slice(0, 200)}`);
    }
    assert.ok(!page.url().includes(TOKEN) && !page.url().includes(USER));
  });
  await page.close();
});

/**
 * What the fake model cannot show: tool calls, Markdown, a run that fails, restoring a conversation
 * that spans two history pages, and feedback with the run's proof, from a scripted agenthost.
 */
test("the chat page in Chromium against a scripted agenthost", { skip: browserSkip }, async (t) => {
  const SCRIPTED_TOKEN = "scripted-token-c0ffee";
  const answer = [
    "**Sum**: the result is `3`.",
    "",
    "- one",
    "- two",
    "",
    "```js",
    "const x = 1 < 2;",
    "```",
    "<script>window.__injected = true</script> [bad](javascript:alert(1)) [docs](https://example.test/docs)",
  ].join("\n");
  const toolCall = { type: "ai", content: "", thread_id: "t-md", run_id: "run-md", tool_calls: [{ name: "add", args: { a: 1, b: 2 }, id: "c1" }] };
  const toolResult = { type: "tool", content: "3", name: "add", tool_call_id: "c1", thread_id: "t-md", run_id: "run-md", tool_calls: [] };
  const final = { type: "ai", content: answer, thread_id: "t-md", run_id: "run-md", tool_calls: [], feedback_token: "proof-for-run-md" };
  const upstream = await startScriptedServer({
    "GET /info": (_req, res) => sendJson(res, 200, INFO),
    "GET /chatbot-agent/history": (req, res) => {
      const first = (req.query.get("offset") ?? "0") === "0";
      const human = { type: "human", content: "What is 1 + 2?", thread_id: "t-md", tool_calls: [] };
      sendJson(res, 200, first
        ? { messages: [human, toolCall], total: 4, next_offset: 2 }
        : { messages: [toolResult, { ...final, feedback_token: undefined }], total: 4, next_offset: null });
    },
    "POST /chatbot-agent/stream": (req, res) => {
      startSse(res);
      if (req.body.includes("please fail")) {
        res.write(sseFrame({ type: "token", content: "Half an answer" }));
        res.end(sseFrame({ type: "error", content: "The agent run failed.", error_code: "run_failed" }) + sseFrame("[DONE]"));
        return;
      }
      res.write(sseFrame({ type: "message", content: toolCall }));
      res.write(sseFrame({ type: "message", content: toolResult }));
      res.write(sseFrame({ type: "token", content: "**Sum**" }));
      res.write(sseFrame({ type: "message", content: final }));
      res.end(sseFrame("[DONE]"));
    },
    "POST /chatbot-agent/feedback": (_req, res) => sendJson(res, 201, {}),
  });
  const page2 = await startChatServer({ agenthostUrl: upstream.url, authSecret: SCRIPTED_TOKEN, userId: "ui-user", host: "127.0.0.1", port: 0 });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  await page.addInitScript(teeChat);
  const network: NetworkLog = [];
  record(page, network);
  try {
    await t.test("restores a conversation from two history pages, tool steps collapsed, Markdown rendered safely", async () => {
      await page.goto(`${page2.url}/?agent=chatbot-agent&thread_id=t-md`);
      await idle(page);
      await page.waitForSelector(".msg.ai");
      assert.deepEqual(
        upstream.requests.filter((r) => r.path.endsWith("/history")).map((r) => [r.query.get("offset"), r.query.get("user_id")]),
        [["0", "ui-user"], ["2", "ui-user"]],
      );
      assert.equal(await page.textContent(".msg.human"), "What is 1 + 2?");
      const tools = page.locator("details.tool");
      assert.equal(await tools.count(), 2);
      assert.deepEqual(await tools.evaluateAll((nodes) => nodes.map((n) => (n as HTMLDetailsElement).open)), [false, false]);
      assert.equal(await tools.first().locator("summary").textContent(), "Tool call: add");
      assert.equal(await tools.nth(1).locator("summary").textContent(), "Tool result: add");
      const bubble = page.locator(".msg.ai").last();
      assert.equal(await bubble.locator("strong").textContent(), "Sum");
      assert.equal(await bubble.locator("li").count(), 2);
      assert.equal(await bubble.locator("pre code").textContent(), "const x = 1 < 2;");
      assert.equal(await bubble.locator("a").count(), 1);
      assert.equal(await bubble.locator("a").getAttribute("href"), "https://example.test/docs");
      assert.equal(await bubble.locator("script").count(), 0);
      assert.match((await bubble.textContent()) ?? "", /<script>window.__injected = true<\/script>/);
      assert.equal(await page.evaluate(() => (window as unknown as { __injected?: boolean }).__injected), undefined);
    });

    await t.test("streams tool steps before the answer, and sends feedback with the run's proof from the server side", async () => {
      await page.click("#new-chat");
      await send(page, "please add");
      assert.equal(await page.locator("details.tool").count(), 2);
      assert.equal(await page.locator(".msg.ai").count(), 1);
      await page.locator(".msg.ai .feedback-down").click();
      await page.waitForSelector(".feedback[data-sent='0']");
      const feedback = upstream.requests.find((r) => r.path === "/chatbot-agent/feedback");
      assert.ok(feedback);
      assert.equal(feedback.headers.authorization, `Bearer ${SCRIPTED_TOKEN}`);
      assert.deepEqual(JSON.parse(feedback.body), {
        run_id: "run-md",
        key: "human-feedback-thumbs",
        score: 0,
        user_id: "ui-user",
        feedback_token: "proof-for-run-md",
      });
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: new URL("chat-page-tools.png", ARTIFACTS).pathname, fullPage: true });
    });

    await t.test("a run that fails shows its error", async () => {
      await send(page, "please fail");
      await page.waitForSelector("#error:not([hidden])");
      assert.match((await page.textContent("#error")) ?? "", /^The run failed\. \(the agent run failed: The agent run failed\.\)$/);
      assert.equal(await page.locator(".msg.ai").last().textContent(), "Half an answer");
    });

    await t.test("the token, the user id and the proof never reach the browser", async () => {
      const chatBodies = await page.evaluate(() => (window as unknown as TeeWindow).chatBodies);
      for (const text of [await page.content(), ...network.map((entry) => entry.text), ...chatBodies]) {
        assert.ok(!text.includes(SCRIPTED_TOKEN), text.slice(0, 200));
        assert.ok(!text.includes("ui-user"), text.slice(0, 200));
        assert.ok(!text.includes("proof-for-run-md"), text.slice(0, 200));
      }
    });
  } finally {
    await page.close();
    await page2.close();
    await upstream.close();
  }
});
