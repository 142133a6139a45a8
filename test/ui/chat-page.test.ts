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
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { storageKey } from "../../src/auth/storage-key.ts";
import { RunAborted } from "../../src/errors/classify.ts";
import { startChatServer } from "../../src/ui/server.ts";
import { startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { freePort } from "../cluster/cluster-helper.ts";
import { TcpProxy } from "../helpers/tcp-proxy.ts";
import { LONG_CODE, LONG_ITEMS, PARTIAL_ANSWER } from "../fixtures/chat-page-agents.ts";
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
/**
 * How long a wait for the page may take before it counts as hung. A hang bound, no speed target: on
 * a 2-core machine running the rest of the suite, a long streamed answer took more than 10 s to start.
 */
const PAGE_WAIT_MS = 60_000;

/** Store `messages` in a conversation through the service's history append route. */
async function addMessages(agent: string, threadId: string, messages: ReadonlyArray<{ type: string; content: string }>): Promise<void> {
  const added = await fetch(`${service.url}/${agent}/history/add_messages`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ thread_id: threadId, messages }),
  });
  assert.equal(added.status, 201, await added.text());
}
const USER = "chat-ui-user-42b1";
const ARTIFACTS = new URL("../artifacts/", import.meta.url);
const fixture = (file: string) => fileURLToPath(new URL(`../fixtures/${file}`, import.meta.url));

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
    AGENT_PATHS: JSON.stringify([
      `${fixture("chat-page-agents.ts")}:markdownAgent`,
      `${fixture("chat-page-agents.ts")}:stoppableAgent`,
      `${fixture("chat-page-agents.ts")}:longAnswerAgent`,
      `${fixture("interrupt-agents.ts")}:askName`,
      `${fixture("interrupt-agents.ts")}:twoQuestions`,
      `${fixture("deep-agent-scripted.ts")}:scriptedDeepAgent`,
    ]),
    DEEP_AGENT_INTERRUPT_ON: "write_file,edit_file",
  });
  // Grace 0: a page that leaves stops its run at once (the reconnect test below uses the default).
  chat = await startChatServer({ agenthostUrl: service.url, authSecret: TOKEN, userId: USER, host: "127.0.0.1", port: 0 }, { reconnectGraceMs: 0 });
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

/** What the Retry button showed, each time it changed (see the 503 test). */
interface RetryWindow {
  retryShown: Array<{ text: string | null; disabled: boolean }>;
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

/** The answers shown, as text. */
async function answers(page: Page): Promise<string[]> {
  return (await page.locator(".msg.ai").allTextContents()).map((text) => text.trim());
}

const browserSkip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed`;

test("the chat page in Chromium against agenthost", { skip: browserSkip }, async (t) => {
  const page = await context.newPage();
  await page.addInitScript(teeChat);
  page.setDefaultTimeout(PAGE_WAIT_MS);
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

  await t.test("a thumbs-up to a service with no feedback destination says it was not recorded, and thanks for nothing", async () => {
    // This agenthost has no feedback destination (OBSERVABILITY_BACKEND unset): its answer says "skipped".
    const answered = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/feedback");
    await page.locator(".msg.ai .feedback-up").last().click();
    assert.deepEqual(await (await answered).json(), { delivery: "skipped" });
    await page.waitForSelector(".feedback[data-delivery='skipped']");
    assert.equal(await page.isHidden("#error"), true);
    assert.equal(await page.textContent(".feedback-note"), "Not recorded: this server does not record feedback.");
    assert.doesNotMatch((await page.textContent(".feedback")) ?? "", /Thanks/);
    assert.equal(await page.locator(".feedback button.chosen").count(), 0, "no button looks chosen");
    assert.equal(await page.locator(".feedback[data-sent]").count(), 0);
    assert.deepEqual(await page.locator(".feedback button").evaluateAll((nodes) => nodes.map((n) => (n as HTMLButtonElement).disabled)), [true, true]);
  });

  await t.test("reloading the URL restores the conversation from history", async () => {
    await page.reload();
    await idle(page);
    await page.waitForSelector(".msg.ai");
    assert.equal(await page.textContent(".msg.human"), "Hello from the browser");
    assert.equal(await page.locator(".msg.ai p").first().textContent(), FAKE);
    assert.equal(new URL(page.url()).searchParams.get("thread_id"), firstThread);
    // The restored answer knows its run, so it can still be rated.
    assert.equal(await page.locator(".msg.ai .feedback-up").count(), 1);
    assert.equal(await page.locator(".msg.ai .feedback-down").count(), 1);
    sources.push(await page.content());
  });

  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: new URL("chat-page.png", ARTIFACTS).pathname, fullPage: true });

  await t.test("a conversation busy with another request shows a 409 error", async () => {
    const outcome = await service.runtime.locks.acquire(storageKey(USER, "chatbot-agent", firstThread));
    assert.ok(outcome.ok);
    const humans = await page.locator(".msg.human").count();
    try {
      await send(page, "Are you busy?");
      await page.waitForSelector("#error:not([hidden])");
      assert.equal(await page.getAttribute("#error", "data-status"), "409");
      assert.equal(
        await page.textContent("#error"),
        "This conversation is busy with another request. Wait for it to finish, then send again. Your message was not sent; it is back in the message box.",
      );
      // Not sent: no bubble for it; it waits in the message box.
      assert.equal(await page.locator(".msg.human").count(), humans);
      assert.equal(await page.inputValue("#input"), "Are you busy?");
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

  await t.test("a full service shows a 503 error; Retry waits out its Retry-After, then sends again", async () => {
    const held: (() => void)[] = [];
    for (let release = await service.runtime.admission.acquire(); release; release = await service.runtime.admission.acquire()) {
      held.push(release);
    }
    const humans = await page.locator(".msg.human").count();
    // The button counts the Retry-After's second down: what it showed is recorded as it changes, since
    // on a loaded machine the second may be over before the test gets to look.
    await page.evaluate(() => {
      const retry = document.querySelector<HTMLButtonElement>("#retry")!;
      const shown: Array<{ text: string | null; disabled: boolean }> = [];
      (window as unknown as RetryWindow).retryShown = shown;
      new MutationObserver(() => shown.push({ text: retry.textContent, disabled: retry.disabled })).observe(retry, {
        attributes: true,
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
    try {
      await send(page, "Anyone there?");
      await page.waitForSelector("#error:not([hidden])");
      assert.equal(await page.getAttribute("#error", "data-status"), "503");
      assert.match((await page.textContent("#error")) ?? "", /^agenthost is busy or unavailable \(503\)\. Retry after 1 s\. Your message was not sent; it is back in the message box\.$/);
      assert.equal(await page.inputValue("#input"), "Anyone there?");
      await page.screenshot({ path: new URL("chat-page-503.png", ARTIFACTS).pathname, fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: new URL("chat-page-503-phone.png", ARTIFACTS).pathname, fullPage: true });
      await page.setViewportSize({ width: 1000, height: 760 });
    } finally {
      for (const release of held) release();
    }
    await page.waitForSelector("#retry:not([disabled])");
    assert.equal(await page.textContent("#retry"), "Retry");
    const shown = await page.evaluate(() => (window as unknown as RetryWindow).retryShown);
    const counting = shown.findIndex((state) => state.text === "Retry in 1 s" && state.disabled);
    assert.ok(counting >= 0, `the button showed "Retry in 1 s", disabled: ${JSON.stringify(shown)}`);
    assert.ok(
      shown.slice(counting + 1).some((state) => state.text === "Retry" && !state.disabled),
      `then "Retry", enabled: ${JSON.stringify(shown)}`,
    );
    const bodies = await page.evaluate(() => (window as unknown as TeeWindow).chatBodies.length);
    await page.click("#retry");
    await page.waitForFunction(
      (count) => {
        const all = (window as unknown as TeeWindow).chatBodies;
        return all.length > count && /"type":"done"/.test(all.at(-1) ?? "");
      },
      bodies,
    );
    await idle(page);
    assert.equal(await page.isHidden("#error"), true);
    assert.equal(await page.isHidden("#retry"), true);
    assert.equal(await page.locator(".msg.human").count(), humans + 1, "the failed message is not shown twice");
    assert.equal(await page.inputValue("#input"), "", "Retry sent what was in the message box");
    assert.equal(await page.locator(".msg.human").last().textContent(), "Anyone there?");
    assert.equal((await page.locator(".msg.ai p").last().textContent())?.trim(), FAKE);
  });

  await t.test("the sidebar lists the conversations newest first; one opens, a long one pages back on scroll, one is deleted", async () => {
    const titles = () => page.locator("#thread-list .thread-title").allTextContents();
    await page.waitForFunction(() => document.querySelectorAll("#thread-list button.thread").length === 2);
    assert.deepEqual(await titles(), ["A second conversation", "Hello from the browser"]);
    await page.locator("#thread-list button.thread").nth(1).click();
    await idle(page);
    await page.waitForSelector(".msg.human");
    assert.equal(new URL(page.url()).searchParams.get("thread_id"), firstThread);
    assert.equal(await page.textContent(".msg.human"), "Hello from the browser");
    assert.equal(await page.getAttribute("#thread-list button.thread >> nth=1", "aria-current"), "true");

    // A conversation of 110 messages: the newest 50 first, earlier pages as the reader scrolls up.
    const longThread = "long-conversation";
    const messages = Array.from({ length: 110 }, (_, i) => ({ type: i % 2 ? "ai" : "human", content: `message ${i + 1}` }));
    await addMessages("chatbot-agent", longThread, messages);
    await page.goto(`${chat.url}/?agent=chatbot-agent&thread_id=${longThread}`);
    await idle(page);
    await page.waitForFunction(() => document.querySelectorAll("#messages .msg").length === 50);
    assert.equal((await page.locator("#messages .msg").last().textContent())?.trim(), "message 110");
    assert.equal(await page.waitForFunction(() => document.querySelectorAll("#thread-list button.thread").length === 3).then(() => true), true);
    assert.equal(await page.locator("#thread-list .thread-title").first().textContent(), "message 1");
    await page.evaluate(() => window.scrollTo({ top: 0 }));
    await page.waitForFunction(() => document.querySelectorAll("#messages .msg").length === 100);
    await page.evaluate(() => window.scrollTo({ top: 0 }));
    await page.waitForFunction(() => document.querySelectorAll("#messages .msg").length === 110);
    assert.equal((await page.locator("#messages .msg").first().textContent())?.trim(), "message 1");
    assert.equal(await page.isHidden("#older"), true);
    const shown = await page.locator("#messages .msg").allTextContents();
    assert.deepEqual(shown.map((text) => text.trim()), messages.map((m) => m.content));

    // Delete asks first; Cancel keeps the conversation.
    await page.click("#delete-chat");
    await page.waitForSelector("#confirm-delete[open]");
    await page.screenshot({ path: new URL("chat-delete-confirm.png", ARTIFACTS).pathname });
    await page.click("#confirm-delete-no");
    assert.equal(new URL(page.url()).searchParams.get("thread_id"), longThread);
    assert.equal(await page.locator("#thread-list button.thread").count(), 3);
    await page.click("#delete-chat");
    await page.click("#confirm-delete-yes");
    await page.waitForFunction(() => document.querySelectorAll("#thread-list button.thread").length === 2);
    assert.equal(new URL(page.url()).searchParams.get("thread_id"), null);
    assert.equal(await page.locator("#messages > *").count(), 0);
    const history = await fetch(`${service.url}/chatbot-agent/history?thread_id=${longThread}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(((await history.json()) as { total: number }).total, 0);

    // Ctrl+Shift+O starts a new chat from an open one.
    await page.locator("#thread-list button.thread").first().click();
    await page.waitForSelector(".msg.human");
    await page.keyboard.press("Control+Shift+O");
    assert.equal(await page.locator("#messages > *").count(), 0);
    // "/" outside a text box goes to the message box.
    await page.click("header h1");
    await page.keyboard.press("/");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "input");
    assert.equal(await page.inputValue("#input"), "");
    assert.equal(new URL(page.url()).searchParams.get("thread_id"), null);
    await page.screenshot({ path: new URL("chat-sidebar-desktop.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    assert.equal(await page.isVisible("#toggle-sidebar"), true);
    await page.click("#toggle-sidebar");
    await page.waitForFunction(() => document.getElementById("sidebar")!.getBoundingClientRect().left >= 0);
    await page.screenshot({ path: new URL("chat-sidebar-phone.png", ARTIFACTS).pathname });
    await page.mouse.click(370, 400);
    assert.equal(await page.getAttribute("body", "data-sidebar"), "closed", "a tap beside the sidebar closes it");
    await page.click("#toggle-sidebar");
    await page.locator("#thread-list button.thread").first().click();
    await page.waitForSelector(".msg.human");
    assert.equal(await page.getAttribute("body", "data-sidebar"), "closed");
    await page.setViewportSize({ width: 1000, height: 760 });
  });

  await t.test("streams a long Markdown answer block by block: a table, nested lists, numbering, code with a copy button", async () => {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: chat.url });
    await page.selectOption("#agent", "markdown-agent");
    await idle(page);
    // Count the block elements the page puts into the conversation while the answer streams in.
    await page.evaluate(() => {
      const added: Record<string, number> = {};
      (window as unknown as { added: Record<string, number> }).added = added;
      new MutationObserver((records) => {
        for (const record of records) {
          for (const node of Array.from(record.addedNodes)) if (node instanceof Element) added[node.tagName] = (added[node.tagName] ?? 0) + 1;
        }
      }).observe(document.getElementById("messages")!, { childList: true, subtree: true });
    });
    const events = await send(page, "Compare the engines");
    const tokens = events.split("\n").filter((line) => line.includes('"type":"token"')).length;
    assert.ok(tokens > 60, `the answer streamed in many tokens (${tokens})`);
    const added = await page.evaluate(() => (window as unknown as { added: Record<string, number> }).added);
    // Re-rendering the whole answer per token would add the heading once per token.
    assert.ok((added.H2 ?? 0) <= 3, `the finished heading was rendered ${added.H2} times for ${tokens} tokens`);
    assert.ok((added.OL ?? 0) <= 12, `the numbered list was rendered ${added.OL} times`);
    const answer = page.locator(".msg.ai").last();
    assert.equal(await answer.locator("h2").count(), 1);
    assert.deepEqual(await answer.locator("th").allTextContents(), ["Engine", "Speed", "Notes"]);
    assert.deepEqual(await answer.locator("tbody td").allTextContents(), ["SQLite", "fast", "one file", "PostgreSQL", "faster", "a server"]);
    assert.equal(await answer.locator("ul > li > ul > li").count(), 2, "nested bullets");
    const numbered = answer.locator("ol");
    assert.equal(await numbered.count(), 1);
    assert.equal(await numbered.locator("li").count(), 3);
    assert.ok([null, "1"].includes(await numbered.getAttribute("start")), "numbering starts at 1 after the bullets");
    assert.equal((await answer.locator("pre code").textContent())?.trim(), "const answer: number = 6 * 7;\nconsole.log(`<b>${answer}</b>`);");
    assert.equal(await answer.locator("pre b").count(), 0);
    assert.equal(await answer.locator(".code-bar").first().textContent(), "tsCopy");
    await answer.locator(".copy-code").click();
    await page.waitForSelector(".copy-code:text('Copied')");
    assert.match(await page.evaluate(() => navigator.clipboard.readText()), /^const answer: number = 6 \* 7;/);
    assert.equal(await answer.locator("a").getAttribute("href"), "https://example.test/docs");
    assert.equal(await answer.locator(".feedback-up").count(), 1);
    assert.equal(await page.locator(".msg.streaming").count(), 0);
    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: new URL("chat-markdown-desktop.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: new URL("chat-markdown-phone.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 1000, height: 760 });
  });

  await t.test("Stop (button or Esc) stops a streaming answer through the cancel route; the partial answer stays, marked stopped", async () => {
    await page.selectOption("#agent", "stoppable-agent");
    await idle(page);
    for (const how of ["button", "escape"]) {
      await page.fill("#input", `Start something (${how})`);
      await page.press("#input", "Enter");
      await page.waitForFunction((partial) => document.querySelector(".msg.streaming")?.textContent?.includes(partial), PARTIAL_ANSWER);
      assert.equal(await page.isVisible("#stop"), true);
      assert.equal(await page.isHidden("#send"), true);
      if (how === "button") {
        // The new conversation is in the sidebar while its first answer still streams.
        const thread = new URL(page.url()).searchParams.get("thread_id")!;
        const item = page.locator(`#thread-list button.thread[data-thread-id="${thread}"]`);
        assert.equal(await item.locator(".thread-title").textContent(), "Start something (button)");
        assert.equal(await item.getAttribute("aria-current"), "true");
        assert.equal(await page.isVisible("#stop"), true, "still streaming");
        await page.screenshot({ path: new URL("chat-stop-streaming.png", ARTIFACTS).pathname, fullPage: true });
        await page.setViewportSize({ width: 390, height: 844 });
        await page.screenshot({ path: new URL("chat-stop-streaming-phone.png", ARTIFACTS).pathname, fullPage: true });
        await page.setViewportSize({ width: 1000, height: 760 });
        await page.click("#stop");
      } else {
        await page.keyboard.press("Escape");
      }
      await page.waitForSelector(".msg.stopped .stopped-note");
      await idle(page);
      const stopped = page.locator(".msg.ai").last();
      assert.ok((await stopped.textContent())?.includes(PARTIAL_ANSWER));
      assert.equal(await stopped.getAttribute("class"), "msg ai stopped");
      assert.equal(await page.isHidden("#error"), true);
      assert.equal(await page.isVisible("#send"), true);
      assert.equal(await page.isHidden("#stop"), true);
    }
    assert.equal(await page.locator(".msg.stopped").count(), 2, "the second run started at once: the stop released the conversation");
    assert.ok(
      service.logs.some((line) => JSON.stringify(line).includes("run_cancelled")),
      "the service logged the cancelled runs",
    );
    await page.screenshot({ path: new URL("chat-stopped-desktop.png", ARTIFACTS).pathname, fullPage: true });

    // Leaving the page mid-answer stops the run too: its conversation's lock comes free.
    await page.click("#new-chat");
    await page.fill("#input", "Start and leave");
    await page.press("#input", "Enter");
    await page.waitForFunction((partial) => document.querySelector(".msg.streaming")?.textContent?.includes(partial), PARTIAL_ANSWER);
    const left = new URL(page.url()).searchParams.get("thread_id")!;
    await page.goto(`${chat.url}/?agent=stoppable-agent`);
    for (;;) {
      const outcome = await service.runtime.locks.acquire(storageKey(USER, "stoppable-agent", left));
      if (outcome.ok) {
        await outcome.lease.release();
        break;
      }
    }
    await idle(page);
  });

  await t.test("a paused run's question is answered in its card, and the run resumes", async () => {
    await page.selectOption("#agent", "ask-name");
    await idle(page);
    await send(page, "Hi there");
    const card = page.locator(".interrupt").last();
    assert.equal(await card.locator(".interrupt-question").textContent(), "What is your name?");
    await card.locator(".interrupt-answer").fill("Ada");
    const answered = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/chat");
    await card.locator("button.answer").click();
    await answered;
    await page.waitForFunction(() => document.querySelector("#messages")?.lastElementChild?.textContent?.includes("Hello, Ada!"));
    await idle(page);
    assert.equal(await card.getAttribute("data-answered"), "true");
    assert.equal(await card.locator(".interrupt-answered").textContent(), "Answered: Ada");
    assert.equal(await card.locator("button.answer").isDisabled(), true);
    assert.equal(await page.locator(".msg.human").count(), 1, "the answer is shown in the card, not as a message");
    assert.equal(await page.isHidden("#error"), true);
  });

  await t.test("two questions asked at once each get their own answer box; each answer reaches its own question", async () => {
    await page.selectOption("#agent", "two-questions");
    await idle(page);
    await send(page, "Ask me");
    const card = page.locator(".interrupt").nth(0);
    assert.deepEqual(await card.locator(".interrupt-question").allTextContents(), ["Favourite colour?", "Favourite number?"]);
    assert.equal(await card.locator(".interrupt-answer").count(), 2);
    assert.equal(await page.isDisabled("#input"), true, "the composer waits for the questions");
    await page.screenshot({ path: new URL("chat-questions-desktop.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: new URL("chat-questions-phone.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 1000, height: 760 });

    // A draft typed for the second question is kept while the first is answered.
    const colour = card.locator(".question").nth(0);
    await card.locator(".question").nth(1).locator(".interrupt-answer").fill("7");
    await colour.locator(".interrupt-answer").fill("blue");
    const first = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/chat");
    await colour.locator("button.answer").click();
    const sent = (await first).request().postDataJSON() as { message: string; resume: Record<string, string> };
    const ids = Object.keys(sent.resume);
    assert.equal(ids.length, 1);
    assert.deepEqual(sent.resume, { [ids[0]!]: "blue" });
    assert.equal(await colour.getAttribute("data-interrupt-id"), ids[0]);

    // The run answers the colour and pauses again on the number, in a new card.
    const again = page.locator(".interrupt").nth(1);
    await again.waitFor();
    await idle(page);
    assert.equal(await colour.locator(".interrupt-answered").textContent(), "Answered: blue");
    assert.equal(await card.getAttribute("data-answered"), "true");
    assert.deepEqual(await again.locator(".interrupt-question").allTextContents(), ["Favourite number?"]);
    assert.equal(await again.locator(".interrupt-answer").inputValue(), "7");
    assert.equal(await again.locator(".interrupt-answer").isEnabled(), true, "the second question is still answerable");
    assert.deepEqual(await answers(page), ["Colour: blue"]);

    const second = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/chat");
    await again.locator(".interrupt-answer").press("Enter");
    const resumed = (await second).request().postDataJSON() as { resume: Record<string, string> };
    assert.equal(Object.keys(resumed.resume)[0], await again.locator(".question").getAttribute("data-interrupt-id"));
    await page.waitForFunction(() => document.querySelector("#messages")?.lastElementChild?.textContent?.trim() === "Number: 7");
    await idle(page);
    assert.equal(await again.locator(".interrupt-answered").textContent(), "Answered: 7");
    assert.deepEqual(await answers(page), ["Colour: blue", "Number: 7"], "each answer once, none an object");
    assert.equal(await page.locator(".msg.human").count(), 1, "the answers are shown in their cards, not as messages");
    assert.equal(await page.isEnabled("#input"), true, "nothing waits any more");
    assert.equal(await page.isHidden("#error"), true);
    await page.screenshot({ path: new URL("chat-questions-answered-desktop.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: new URL("chat-questions-answered-phone.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 1000, height: 760 });

    await page.reload();
    await idle(page);
    await page.waitForSelector(".msg.ai");
    assert.deepEqual(await answers(page), ["Colour: blue", "Number: 7"]);
    assert.equal(await page.locator(".interrupt").count(), 0);
  });

  await t.test("restored questions are answered one at a time after a reload", async () => {
    await page.click("#new-chat");
    await send(page, "Ask me again");
    await page.locator(".interrupt").waitFor();
    await page.reload();
    await idle(page);
    const card = page.locator(".interrupt");
    await card.waitFor();
    assert.deepEqual(await card.locator(".interrupt-question").allTextContents(), ["Favourite colour?", "Favourite number?"]);
    assert.equal(await page.isDisabled("#input"), true);
    await page.screenshot({ path: new URL("chat-questions-reloaded-desktop.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: new URL("chat-questions-reloaded-phone.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 1000, height: 760 });

    // The number first this time.
    const number = card.locator(".question").nth(1);
    await number.locator(".interrupt-answer").fill("7");
    await number.locator("button.answer").click();
    const again = page.locator(".interrupt").nth(1);
    await again.waitFor();
    await idle(page);
    assert.deepEqual(await answers(page), ["Number: 7"]);
    assert.deepEqual(await again.locator(".interrupt-question").allTextContents(), ["Favourite colour?"]);

    // Reloaded between the two answers: the question still open comes back alone, and is answered.
    await page.reload();
    await idle(page);
    const restored = page.locator(".interrupt");
    await restored.waitFor();
    assert.deepEqual(await restored.locator(".interrupt-question").allTextContents(), ["Favourite colour?"]);
    await restored.locator(".interrupt-answer").fill("blue");
    await restored.locator("button.answer").click();
    await page.waitForFunction(() => document.querySelectorAll("#messages .msg.ai").length === 2);
    await idle(page);
    assert.deepEqual((await answers(page)).sort(), ["Colour: blue", "Number: 7"]);
    assert.equal(await restored.locator(".interrupt-answered").textContent(), "Answered: blue");
    assert.equal(await page.isEnabled("#input"), true);
    assert.equal(await page.isHidden("#error"), true);
    const thread = new URL(page.url()).searchParams.get("thread_id")!;
    const history = await fetch(`${service.url}/two-questions/history?thread_id=${thread}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = (await history.json()) as { messages: { content: unknown }[]; interrupts?: unknown };
    assert.equal(body.interrupts, undefined, "nothing is pending any more");
    assert.deepEqual(body.messages.map((m) => m.content).slice(1).sort(), ["Colour: blue", "Number: 7"]);
  });

  await t.test("a deep-agent tool approval shows the tool and arguments; approve, then reject with a reason, and the run goes on", async () => {
    await page.selectOption("#agent", "scripted-deep-agent");
    await idle(page);
    await send(page, "Take a note");
    const card = page.locator(".interrupt").nth(0);
    await card.waitFor();
    assert.equal(await card.locator(".approval-tool").textContent(), "Tool: write_file");
    assert.deepEqual(JSON.parse((await card.locator(".approval-args").textContent()) ?? ""), { file_path: "/notes.md", content: "hello world\n" });
    await page.screenshot({ path: new URL("chat-approval-desktop.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: new URL("chat-approval-phone.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 1000, height: 760 });
    await card.locator("button.approve").click();
    await page.waitForFunction(() => document.querySelectorAll(".interrupt").length === 2);
    await idle(page);
    assert.equal(await card.locator(".interrupt-answered").textContent(), "Approved");
    const second = page.locator(".interrupt").nth(1);
    assert.equal(await second.locator(".approval-tool").textContent(), "Tool: edit_file");
    await second.locator(".reject-reason").fill("not now");
    await second.locator("button.reject").click();
    await page.waitForFunction(() => document.querySelector("#messages")?.lastElementChild?.textContent?.includes("Done: the note says"));
    await idle(page);
    assert.equal(await second.locator(".interrupt-answered").textContent(), "Rejected: not now");
    const tools = await page.locator("details.tool summary").allTextContents();
    assert.deepEqual(tools, [
      "Tool call: write_file",
      "Tool result",
      "Tool call: edit_file",
      "Tool result",
      "Tool call: read_file",
      "Tool result",
    ]);
    assert.match((await page.locator("details.tool pre").nth(3).textContent()) ?? "", /not now/);
    assert.equal(await page.isHidden("#error"), true);
  });

  await t.test("a pending approval survives a reload and opening from the sidebar; the composer waits for it", async () => {
    await page.click("#new-chat");
    await send(page, "Take a note");
    await page.locator(".interrupt").waitFor();
    assert.equal(await page.isDisabled("#input"), true, "the composer waits for the approval");
    assert.equal(await page.isDisabled("#send"), true);
    const thread = new URL(page.url()).searchParams.get("thread_id")!;

    await page.reload();
    await idle(page);
    const card = page.locator(".interrupt");
    await card.waitFor();
    assert.equal(await card.count(), 1);
    assert.equal(await card.locator(".approval-tool").textContent(), "Tool: write_file");
    assert.deepEqual(JSON.parse((await card.locator(".approval-args").textContent()) ?? ""), { file_path: "/notes.md", content: "hello world\n" });
    assert.equal(await card.locator("button.approve").isEnabled(), true);
    assert.equal(await page.isDisabled("#input"), true);
    assert.equal(await page.getAttribute("#input", "placeholder"), "Answer the agent's request above to go on.");
    await page.screenshot({ path: new URL("chat-approval-reloaded-desktop.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: new URL("chat-approval-reloaded-phone.png", ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 1000, height: 760 });

    // Away to a new chat (the composer is free there), and back through the sidebar: the card is there again.
    await page.click("#new-chat");
    assert.equal(await page.isEnabled("#input"), true);
    await page.locator(`#thread-list button.thread[data-thread-id="${thread}"]`).click();
    await idle(page);
    await card.waitFor();
    assert.equal(await page.isDisabled("#input"), true);

    await card.locator("button.approve").click();
    const second = page.locator(".interrupt").nth(1);
    await second.waitFor();
    await idle(page);
    assert.equal(await card.locator(".interrupt-answered").textContent(), "Approved");
    assert.equal(await second.locator(".approval-tool").textContent(), "Tool: edit_file");
    await second.locator("button.reject").click();
    await page.waitForFunction(() => document.querySelector("#messages")?.lastElementChild?.textContent?.includes("Done: the note says"));
    await idle(page);
    assert.equal(await page.isEnabled("#input"), true, "the composer is free once nothing waits");
    assert.equal(await page.isHidden("#error"), true);
    const history = await fetch(`${service.url}/scripted-deep-agent/history?thread_id=${thread}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(((await history.json()) as { interrupts?: unknown }).interrupts, undefined, "nothing is pending any more");
  });

  await t.test("a long streamed answer (a long list and a long code block) costs DOM work in proportion to its length", async (st) => {
    await page.selectOption("#agent", "long-answer-agent");
    await idle(page);
    await page.evaluate(() => {
      const counts = { elements: 0, byTag: {} as Record<string, number> };
      (window as unknown as { counts: typeof counts }).counts = counts;
      new MutationObserver((records) => {
        for (const record of records) {
          for (const node of Array.from(record.addedNodes)) {
            if (!(node instanceof Element)) continue;
            for (const element of [node, ...Array.from(node.querySelectorAll("*"))]) {
              counts.elements++;
              counts.byTag[element.tagName] = (counts.byTag[element.tagName] ?? 0) + 1;
            }
          }
        }
      }).observe(document.getElementById("messages")!, { childList: true, subtree: true });
    });
    const events = await send(page, "The long one, please");
    const tokens = events.split("\n").filter((line) => line.includes('"type":"token"')).length;
    const counts = await page.evaluate(() => (window as unknown as { counts: { elements: number; byTag: Record<string, number> } }).counts);
    const answer = page.locator(".msg.ai").last();
    assert.equal(await answer.locator("ul > li").count(), LONG_ITEMS);
    assert.equal(await answer.locator("ul").count(), 1, "one list");
    assert.equal((await answer.locator("ul > li").nth(LONG_ITEMS - 1).textContent())?.trim(), `item ${LONG_ITEMS} of the long list, in a few words`);
    assert.equal((await answer.locator("pre code").textContent())?.replace(/\n$/, ""), LONG_CODE);
    assert.equal(await answer.locator(".copy-code").count(), 1);
    assert.equal((await answer.locator("p").last().textContent())?.trim(), "That is all.");
    st.diagnostic(`${tokens} tokens, ${counts.elements} elements inserted: ${JSON.stringify(counts.byTag)}`);
    assert.ok(tokens > 3000, `the answer streamed in many tokens (${tokens})`);
    // Rendering the open block again per token would insert the list's items once per token (over a
    // million elements here); the page inserts about one element per token (an open list's last item).
    assert.ok(counts.elements <= tokens, `${counts.elements} elements inserted for ${tokens} tokens: ${JSON.stringify(counts.byTag)}`);
    assert.ok((counts.byTag.UL ?? 0) <= 20, `the list element was inserted ${counts.byTag.UL} times`);
    assert.ok((counts.byTag.PRE ?? 0) <= 3, `the code block was inserted ${counts.byTag.PRE} times`);
    assert.ok((counts.byTag.LI ?? 0) <= tokens, `${counts.byTag.LI} list items inserted for ${tokens} tokens`);
  });

  await t.test("an error in a long conversation is shown within the window, even scrolled to the top", async () => {
    const longThread = "long-conversation-with-an-error";
    const messages = Array.from({ length: 40 }, (_, i) => ({ type: i % 2 ? "ai" : "human", content: `message ${i + 1}\n\nwith a second paragraph` }));
    await addMessages("chatbot-agent", longThread, messages);
    await page.goto(`${chat.url}/?agent=chatbot-agent&thread_id=${longThread}`);
    await idle(page);
    await page.waitForFunction(() => document.querySelectorAll("#messages .msg").length === 40);
    const inWindow = () =>
      page.evaluate(() => {
        const box = document.getElementById("error")!.getBoundingClientRect();
        return { top: box.top, bottom: box.bottom, height: window.innerHeight, scrolled: window.scrollY, inside: box.top >= 0 && box.bottom <= window.innerHeight && box.height > 0 };
      });
    const outcome = await service.runtime.locks.acquire(storageKey(USER, "chatbot-agent", longThread));
    assert.ok(outcome.ok);
    try {
      await send(page, "Is this one busy?");
      await page.waitForSelector("#error:not([hidden])");
      assert.equal(await page.getAttribute("#error", "data-status"), "409");
    } finally {
      await outcome.lease.release();
    }
    // The failed message stays in view above the error.
    const failed = await page.evaluate(() => {
      const box = Array.from(document.querySelectorAll(".msg.human")).at(-1)!.getBoundingClientRect();
      return { bottom: box.bottom, composer: document.getElementById("composer")!.getBoundingClientRect().top };
    });
    assert.ok(failed.bottom <= failed.composer, `the failed message is above the message box: ${JSON.stringify(failed)}`);
    const atEnd = await inWindow();
    assert.ok(atEnd.scrolled > 1000, `the conversation is long enough to scroll (${atEnd.scrolled})`);
    assert.ok(atEnd.inside, `the error is within the window: ${JSON.stringify(atEnd)}`);
    await page.screenshot({ path: new URL("chat-error-long-desktop.png", ARTIFACTS).pathname });
    await page.evaluate(() => window.scrollTo({ top: 0 }));
    await page.waitForFunction(() => window.scrollY === 0);
    assert.ok((await inWindow()).inside, `scrolled to the top, the error is still within the window: ${JSON.stringify(await inWindow())}`);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.evaluate(() => window.scrollTo({ top: document.body.scrollHeight }));
    assert.ok((await inWindow()).inside, `on a phone too: ${JSON.stringify(await inWindow())}`);
    await page.screenshot({ path: new URL("chat-error-long-phone.png", ARTIFACTS).pathname });
    await page.setViewportSize({ width: 1000, height: 760 });
    await page.click("#retry");
    await page.waitForFunction(() => document.querySelectorAll("#messages .msg.ai").length === 21);
    await idle(page);
    assert.equal(await page.isHidden("#error"), true);
  });

  await t.test("the sidebar shows 30 conversations, and the rest under Older conversations", async () => {
    for (let i = 1; i <= 33; i++) {
      await addMessages("create-agent", `many-${i}`, [{ type: "human", content: `conversation ${i}` }]);
    }
    await page.selectOption("#agent", "create-agent");
    await idle(page);
    await page.waitForFunction(() => document.querySelectorAll("#thread-list button.thread").length === 30);
    const titles = () => page.locator("#thread-list .thread-title").allTextContents();
    assert.equal((await titles())[0], "conversation 33", "newest first");
    assert.equal(await page.isVisible("#more-threads"), true);
    await page.click("#more-threads");
    await page.waitForFunction(() => document.querySelectorAll("#thread-list button.thread").length === 33);
    assert.deepEqual(await titles(), Array.from({ length: 33 }, (_, i) => `conversation ${33 - i}`));
    assert.equal(await page.isHidden("#more-threads"), true, "no more pages");
    await page.locator("#thread-list button.thread").last().click();
    await page.waitForFunction(() => document.querySelector(".msg.human")?.textContent === "conversation 1");
  });

  await t.test("nothing the page asked for was missing (404), the icon included", async () => {
    const missing = network.filter((entry) => entry.text.startsWith("< 404 "));
    assert.deepEqual(missing.map((entry) => entry.url), []);
    assert.ok(network.some((entry) => entry.text.startsWith("< 200 ") && new URL(entry.url).pathname === "/favicon.svg"), "the icon was loaded");
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

test("the chat page keeps a streaming answer when a connection drops (to agenthost, or the browser's own); dark mode", { skip: browserSkip }, async (t) => {
  const proxy = new TcpProxy(Number(new URL(service.url).port));
  await proxy.start();
  const page2 = await startChatServer({ agenthostUrl: `http://127.0.0.1:${proxy.port}`, authSecret: TOKEN, userId: USER, host: "127.0.0.1", port: 0 });
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_WAIT_MS);
  try {
    await t.test("the page server picks the stream up again where it left off; Stop still reaches the run", async () => {
      await page.goto(`${page2.url}/?agent=stoppable-agent`);
      await idle(page);
      await page.fill("#input", "A long one, please");
      await page.press("#input", "Enter");
      await page.waitForFunction((partial) => document.querySelector(".msg.streaming")?.textContent?.includes(partial), PARTIAL_ANSWER);
      const accepted = proxy.accepted;
      proxy.reset();
      // The resumable stream reconnects through the proxy (a new connection).
      while (proxy.accepted === accepted) await new Promise((resolve) => setImmediate(resolve));
      assert.equal(await page.isHidden("#error"), true, "the dropped connection is not an error");
      await page.click("#stop");
      await page.waitForSelector(".msg.stopped .stopped-note");
      await idle(page);
      assert.equal(await page.isHidden("#error"), true);
      assert.equal(await page.locator(".msg.stopped p").textContent(), PARTIAL_ANSWER, "no token lost or repeated");
      assert.equal(await page.locator(".msg.stopped .stopped-note").textContent(), "Stopped");
    });

    await t.test("the browser follows the answer again when its own connection to the page drops", async () => {
      const front = new TcpProxy(Number(new URL(page2.url).port));
      await front.start();
      try {
        await page.goto(`http://127.0.0.1:${front.port}/?agent=stoppable-agent`);
        await idle(page);
        await page.fill("#input", "Keep going through a dropped connection");
        await page.press("#input", "Enter");
        await page.waitForFunction((partial) => document.querySelector(".msg.streaming")?.textContent?.includes(partial), PARTIAL_ANSWER);
        const followed = page.waitForRequest((request) => new URL(request.url()).pathname === "/api/chat/follow");
        front.reset();
        const request = await followed;
        assert.match(new URL(request.url()).searchParams.get("after") ?? "", /^[1-9]\d*$/);
        await page.waitForFunction(() => !document.querySelector(".msg.streaming[data-reconnecting]"));
        assert.equal(await page.isHidden("#error"), true);
        await page.click("#stop");
        await page.waitForSelector(".msg.stopped .stopped-note");
        await idle(page);
        assert.equal(await page.isHidden("#error"), true);
        assert.equal(await page.locator(".msg.stopped p").textContent(), PARTIAL_ANSWER, "no token lost or repeated");
      } finally {
        await front.stop();
      }
    });

    await t.test("dark mode follows prefers-color-scheme", async () => {
      const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      await page.emulateMedia({ colorScheme: "light" });
      assert.equal(await background(), "rgb(255, 255, 255)");
      await page.emulateMedia({ colorScheme: "dark" });
      const [r, g, b] = ((await background()).match(/\d+/g) ?? []).map(Number);
      assert.ok(r! < 60 && g! < 60 && b! < 60, `a dark background: ${await background()}`);
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: new URL("chat-dark-desktop.png", ARTIFACTS).pathname, fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: new URL("chat-dark-phone.png", ARTIFACTS).pathname, fullPage: true });
    });
  } finally {
    await page.close();
    await page2.close();
    await proxy.stop();
  }
});

/**
 * What a new user meets when something around the page is wrong: agenthost not started yet, stopped
 * mid-answer, restarted without the chosen agent, a missing or wrong token, the page's own server
 * gone. Each is said in plain words, a message that was not sent stays in the message box, and once
 * the cause is fixed Retry (or sending again) works in the same page, without a reload. agenthost and
 * the page's server keep their ports across restarts, as they would when restarted by hand.
 */
test("the chat page recovers in place once agenthost is up, the token right, or the agent chosen again", { skip: browserSkip }, async (t) => {
  const agenthostPort = await freePort();
  const pagePort = await freePort();
  const dir = await mkdtemp(join(tmpdir(), "chat-page-recovery-"));
  const withAgents = JSON.stringify([`${fixture("chat-page-agents.ts")}:stoppableAgent`]);
  let agenthost: RunningService | undefined;
  const startAgenthost = async (agentPaths: string) => {
    // One SQLite file across restarts: a restarted agenthost keeps its conversations.
    agenthost = await startService({ PORT: String(agenthostPort), MEMORY_BACKEND: "filedb", FILEDB_DB_PATH: join(dir, "agenthost.sqlite"), AGENT_PATHS: agentPaths });
  };
  const stopAgenthost = async () => {
    const stopped = agenthost;
    agenthost = undefined;
    await stopped?.close();
    // What its process's end would do: a run still going (the stoppable agent waits to be stopped) ends too.
    stopped?.runtime.activeRuns.stopAll(new RunAborted("shutdown"));
  };
  let pageServer: { url: string; close(): Promise<void> } | undefined;
  const startPage = async (authSecret: string | undefined) => {
    pageServer = await startChatServer({ agenthostUrl: `http://127.0.0.1:${agenthostPort}`, authSecret, userId: undefined, host: "127.0.0.1", port: pagePort });
  };
  const stopPage = async () => {
    await pageServer?.close();
    pageServer = undefined;
  };
  await startPage(TEST_TOKEN);
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_WAIT_MS);
  // Every message the page sent to its server: none may go without an agent.
  const chatPosts: string[] = [];
  page.on("request", (request) => {
    if (new URL(request.url()).pathname === "/api/chat") chatPosts.push(request.postData() ?? "");
  });
  const error = async () => ((await page.isHidden("#error")) ? null : await page.textContent("#error"));
  /** Press Enter in the message box (or click Retry) and wait until the page is idle again with an error shown. */
  const failsWith = async (action: () => Promise<void>) => {
    await action();
    await page.waitForSelector("body[data-state=idle] #error:not([hidden])");
    return error();
  };
  const answered = async (action: () => Promise<void>, answer: string) => {
    const count = await page.locator(".msg.ai").count();
    await action();
    await page.waitForFunction(
      ({ count, answer }) => document.querySelectorAll(".msg.ai").length > count && document.querySelector(".msg.ai:last-of-type")?.textContent?.includes(answer),
      { count, answer },
    );
    await idle(page);
    assert.equal(await error(), null);
  };
  const enter = () => page.press("#input", "Enter");
  const retry = () => page.click("#retry");
  const UNREACHABLE = "The chat page cannot reach agenthost. Check that agenthost is running and that the chat page's AGENTHOST_URL points at it, then press Retry.";
  const TOKEN_REFUSED =
    "agenthost did not accept the chat page's token. Set the chat page's AUTH_SECRET to a token agenthost accepts and restart the chat page, then press Retry.";
  try {
    await t.test("agenthost not started: the page says so; a message typed meanwhile is kept, not sent; once agenthost is up, sending it works", async () => {
      await page.goto(`http://127.0.0.1:${pagePort}/`);
      assert.equal(await failsWith(async () => {}), UNREACHABLE);
      assert.equal(await page.locator("#agent option").count(), 0);
      assert.equal(await page.isVisible("#retry"), true);
      // Retry while agenthost is still down asks again, and says the same.
      const asked = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/agents");
      assert.equal(await failsWith(retry), UNREACHABLE);
      assert.equal((await asked).status(), 502);
      // Sending with no agent loaded sends nothing: it asks for the agents again and says why not.
      await page.fill("#input", "Hello once agenthost is up");
      assert.equal(await failsWith(enter), `${UNREACHABLE} No agent could be loaded, so your message was not sent; it is still in the message box.`);
      assert.equal(await page.inputValue("#input"), "Hello once agenthost is up");
      assert.equal(await page.locator(".msg.human").count(), 0, "nothing looks sent");
      assert.deepEqual(chatPosts, []);
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: new URL("chat-recovery-unreachable.png", ARTIFACTS).pathname, fullPage: true });
      await startAgenthost(withAgents);
      await answered(enter, FAKE);
      assert.equal(await page.textContent(".msg.human"), "Hello once agenthost is up");
      assert.equal(await page.inputValue("#input"), "");
      assert.equal(await page.inputValue("#agent"), "chatbot-agent");
    });

    await t.test("agenthost stops mid-answer: what arrived stays, marked Interrupted; Retry once it is back sends the message again", async () => {
      await page.selectOption("#agent", "stoppable-agent");
      await page.fill("#input", "A long one, please");
      await enter();
      await page.waitForFunction((partial) => document.querySelector(".msg.streaming")?.textContent?.includes(partial), PARTIAL_ANSWER);
      await stopAgenthost();
      assert.equal(
        await failsWith(async () => {}),
        "The connection to agenthost was lost during the answer (agenthost may have stopped or restarted). Press Retry to send the message again.",
      );
      assert.equal(await page.locator(".msg.interrupted p").textContent(), PARTIAL_ANSWER);
      assert.equal(await page.locator(".msg.interrupted .failed-note").textContent(), "Interrupted");
      await page.screenshot({ path: new URL("chat-recovery-interrupted.png", ARTIFACTS).pathname, fullPage: true });
      assert.equal(await page.locator(".msg.human").count(), 1);
      await startAgenthost(withAgents);
      await retry();
      await page.waitForFunction((partial) => document.querySelector(".msg.streaming")?.textContent?.includes(partial), PARTIAL_ANSWER);
      assert.equal(await error(), null);
      assert.equal(await page.locator(".msg.interrupted").count(), 0, "the retried answer replaced the interrupted one");
      assert.deepEqual(await page.locator(".msg.human").allTextContents(), ["A long one, please"]);
      await page.click("#stop");
      await page.waitForSelector(".msg.stopped .stopped-note");
      await idle(page);
    });

    await t.test("agenthost restarted without the chosen agent: the page says so, switches agent, and the message waits in the box", async () => {
      await stopAgenthost();
      await startAgenthost("[]");
      const humans = await page.locator(".msg.human").count();
      await page.fill("#input", "Are you still there?");
      assert.equal(
        await failsWith(enter),
        'agenthost no longer offers the agent "stoppable-agent", so the page switched to chatbot-agent (you can choose another agent above). Your message was not sent; it is back in the message box.',
      );
      assert.equal(await page.inputValue("#agent"), "chatbot-agent");
      const agents = await page.$$eval("#agent option", (nodes) => nodes.map((n) => (n as HTMLOptionElement).value));
      assert.ok(!agents.includes("stoppable-agent"), agents.join());
      assert.equal(await page.inputValue("#input"), "Are you still there?");
      assert.equal(await page.locator(".msg.human").count(), 0, `a new chat (it had ${humans} messages), with nothing that looks sent`);
      assert.equal(new URL(page.url()).searchParams.get("agent"), "chatbot-agent");
      await page.screenshot({ path: new URL("chat-recovery-agent-gone.png", ARTIFACTS).pathname, fullPage: true });
      await answered(enter, FAKE);
      assert.deepEqual(await page.locator(".msg.human").allTextContents(), ["Are you still there?"]);
    });

    await t.test("a wrong token: the page says which setting to fix; after the page's server restarts with the right one, Retry sends", async () => {
      const thread = new URL(page.url()).searchParams.get("thread_id");
      await stopPage();
      await startPage("not-the-token");
      await page.fill("#input", "Sent with the wrong token");
      assert.equal(await failsWith(enter), `${TOKEN_REFUSED} Your message was not sent; it is back in the message box.`);
      assert.equal(await page.getAttribute("#error", "data-status"), "401");
      assert.equal(await page.inputValue("#input"), "Sent with the wrong token");
      assert.deepEqual(await page.locator(".msg.human").allTextContents(), ["Are you still there?"]);
      assert.equal(new URL(page.url()).searchParams.get("thread_id"), thread, "still the same conversation");
      await stopPage();
      await startPage(TEST_TOKEN);
      await answered(retry, FAKE);
      assert.deepEqual(await page.locator(".msg.human").allTextContents(), ["Are you still there?", "Sent with the wrong token"]);
      assert.equal(await page.inputValue("#input"), "");
    });

    await t.test("no token when the page opens: it says so; once the page's server has the token, Retry loads the conversation", async () => {
      await stopPage();
      await startPage(undefined);
      await page.reload();
      assert.equal(await failsWith(async () => {}), TOKEN_REFUSED);
      assert.equal(await page.locator(".msg").count(), 0);
      await stopPage();
      await startPage(TEST_TOKEN);
      await retry();
      await page.waitForFunction(() => document.querySelectorAll(".msg.human").length === 2);
      await idle(page);
      assert.equal(await error(), null);
      assert.equal(await page.inputValue("#agent"), "chatbot-agent");
    });

    await t.test("the page's own server gone: the page says so, a new chat's message is kept and the chat not listed; Retry once it is back sends", async () => {
      await page.click("#new-chat");
      const listed = await page.locator("#thread-list button.thread").count();
      await stopPage();
      await page.fill("#input", "Is the page's server there?");
      assert.equal(
        await failsWith(enter),
        "The chat page's server does not answer. Check that bin/chat-ui is still running, then press Retry. Your message was not sent; it is back in the message box.",
      );
      assert.equal(await page.locator(".msg").count(), 0);
      assert.equal(new URL(page.url()).searchParams.get("thread_id"), null);
      assert.equal(await page.locator("#thread-list button.thread").count(), listed);
      await startPage(TEST_TOKEN);
      await answered(retry, FAKE);
      assert.deepEqual(await page.locator(".msg.human").allTextContents(), ["Is the page's server there?"]);
    });

    await t.test("a message that fails while a new one is being typed stays, marked Not sent; Retry sends it and keeps the new draft", async () => {
      // The browser's request is held until the next draft is typed, then fails as a refused connection.
      let held: (() => Promise<void>) | undefined;
      const reached = new Promise<void>((resolve) => {
        void page.route("**/api/chat", (route) => {
          held = () => route.abort("connectionrefused");
          resolve();
        });
      });
      const humans = await page.locator(".msg.human").count();
      await page.fill("#input", "Sent while the network fails");
      await enter();
      await reached;
      await page.fill("#input", "The next draft");
      assert.equal(
        await failsWith(() => held!()),
        "The chat page's server does not answer. Check that bin/chat-ui is still running, then press Retry. Your message was not sent.",
      );
      await page.unroute("**/api/chat");
      assert.equal(await page.locator(".msg.human.not-sent").count(), 1);
      assert.equal(await page.locator(".msg.human.not-sent .failed-note").textContent(), "Not sent");
      assert.equal(await page.inputValue("#input"), "The next draft", "the new draft is left alone");
      await answered(retry, FAKE);
      assert.equal(await page.locator(".msg.human.not-sent").count(), 0);
      assert.equal(await page.locator(".msg.human").count(), humans + 1);
      assert.equal(await page.locator(".msg.human").last().textContent(), "Sent while the network fails");
      assert.equal(await page.inputValue("#input"), "The next draft");
      await page.fill("#input", "");
    });

    await t.test("no message went without an agent, and no internal validation text was shown", async () => {
      assert.ok(chatPosts.length > 0);
      for (const body of chatPosts) assert.match((JSON.parse(body) as { agent: string }).agent, /^[a-z-]+$/);
      assert.doesNotMatch((await page.textContent("body")) ?? "", /Too small|expected string/);
    });
  } finally {
    await page.close();
    await stopPage();
    await stopAgenthost();
    await rm(dir, { recursive: true, force: true });
  }
});

const PNG_1PX = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");

/** Drop or paste files on the page, as a browser does with a real DataTransfer. */
async function dropOrPaste(page: Page, how: "drop" | "paste", files: { name: string; type: string; text: string }[]): Promise<void> {
  await page.evaluate(
    ({ how, files }) => {
      const transfer = new DataTransfer();
      for (const file of files) transfer.items.add(new File([file.text], file.name, { type: file.type }));
      if (how === "drop") {
        document.getElementById("messages")!.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
      } else {
        document.getElementById("input")!.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
      }
    },
    { how, files },
  );
}

test("attachments by picker, drop and paste, within the page's limits, shown in the bubble and in restored history", { skip: browserSkip }, async (t) => {
  const page3 = await startChatServer({
    agenthostUrl: service.url,
    authSecret: TOKEN,
    userId: USER,
    host: "127.0.0.1",
    port: 0,
    maxAttachments: 2,
    maxUploadBytes: 2048,
  });
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_WAIT_MS);
  await page.addInitScript(teeChat);
  try {
    await t.test("two files go with the message as content blocks; a third and an oversized one are refused with a clear message", async () => {
      await page.goto(`${page3.url}/?agent=chatbot-agent`);
      await idle(page);
      await page.setInputFiles("#file", [{ name: "dot.png", mimeType: "image/png", buffer: PNG_1PX }]);
      await page.waitForSelector("#attachments .attachment img");
      await dropOrPaste(page, "drop", [{ name: "notes.txt", type: "text/plain", text: "hello notes" }]);
      await page.waitForFunction(() => document.querySelectorAll("#attachments .attachment").length === 2);
      await dropOrPaste(page, "paste", [{ name: "third.txt", type: "text/plain", text: "one too many" }]);
      await page.waitForSelector("#error:not([hidden])");
      assert.equal(await page.textContent("#error"), "At most 2 attachments per message; third.txt was not added.");
      await page.click("#attachments .attachment >> nth=1 >> button.remove");
      await dropOrPaste(page, "paste", [{ name: "big.txt", type: "text/plain", text: "x".repeat(3000) }]);
      await page.waitForFunction(() => /too large/.test(document.getElementById("error")!.textContent ?? ""));
      assert.match((await page.textContent("#error")) ?? "", /^big\.txt \(3 KB\) is too large: the attachments of one message may hold 2 KB together\.$/);
      await dropOrPaste(page, "paste", [{ name: "pasted.txt", type: "text/plain", text: "pasted text" }]);
      await page.waitForFunction(() => document.querySelectorAll("#attachments .attachment").length === 2);
      await page.screenshot({ path: new URL("chat-attachments-composer.png", ARTIFACTS).pathname, fullPage: true });
      const events = await send(page, "What is in these?");
      assert.match(events, /"type":"done"/);
      assert.equal(await page.isHidden("#error"), true);
      assert.equal(await page.isHidden("#attachments"), true);
      const bubble = page.locator(".msg.human").last();
      assert.equal(await bubble.locator(".text").textContent(), "What is in these?");
      assert.equal(await bubble.locator("img").getAttribute("alt"), "dot.png");
      assert.equal(await bubble.locator(".attachment").textContent(), "File: pasted.txt");
      assert.equal((await page.locator(".msg.ai p").last().textContent())?.trim(), FAKE);
    });

    await t.test("the stored conversation holds the blocks, and reloading shows them again", async () => {
      const thread = new URL(page.url()).searchParams.get("thread_id")!;
      const stored = await fetch(`${service.url}/chatbot-agent/history?thread_id=${thread}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const human = ((await stored.json()) as { messages: { type: string; content: unknown }[] }).messages[0]!;
      assert.deepEqual(human.content, [
        { type: "text", text: "What is in these?" },
        { type: "image", base64: PNG_1PX.toString("base64"), mime_type: "image/png", filename: "dot.png" },
        { type: "file", base64: Buffer.from("pasted text").toString("base64"), mime_type: "text/plain", filename: "pasted.txt" },
      ]);
      await page.reload();
      await idle(page);
      await page.waitForSelector(".msg.human img");
      assert.equal(await page.locator(".msg.human .attachment").textContent(), "File: pasted.txt");
      assert.equal(await page.evaluate(() => (document.querySelector(".msg.human img") as HTMLImageElement).naturalWidth), 1);
      await page.screenshot({ path: new URL("chat-attachments-desktop.png", ARTIFACTS).pathname, fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: new URL("chat-attachments-phone.png", ARTIFACTS).pathname, fullPage: true });
    });

    await t.test("the page server refuses more attachments than its limit with 413 and a clear body", async () => {
      const block = { type: "file", base64: "aGk=", mime_type: "text/plain" };
      const response = await fetch(`${page3.url}/api/chat`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agent: "chatbot-agent", message: "", attachments: [block, block, block] }),
      });
      assert.equal(response.status, 413);
      assert.equal(((await response.json()) as { error: { message: string } }).error.message, "at most 2 attachments per message");
    });
  } finally {
    await page.close();
    await page3.close();
  }
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
    "<script>window.__injected = true</script>",
    "",
    "[bad](javascript:alert(1)) [docs](https://example.test/docs) <img src=x onerror=window.__injected=true>",
  ].join("\n");
  const toolCall = { type: "ai", content: "", thread_id: "t-md", run_id: "run-md", tool_calls: [{ name: "add", args: { a: 1, b: 2 }, id: "c1" }] };
  const toolResult = { type: "tool", content: "3", name: "add", tool_call_id: "c1", thread_id: "t-md", run_id: "run-md", tool_calls: [] };
  const final = { type: "ai", content: answer, thread_id: "t-md", run_id: "run-md", tool_calls: [], feedback_token: "proof-for-run-md" };
  const upstream = await startScriptedServer({
    "GET /info": (_req, res) => sendJson(res, 200, INFO),
    "GET /chatbot-agent/threads": (_req, res) => sendJson(res, 200, { threads: [], total: 0, next_offset: null }),
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
    "POST /chatbot-agent/feedback": (_req, res) => sendJson(res, 201, { feedback_id: "f-md", run_id: "run-md", key: "human-feedback-thumbs", delivery: "queued" }),
  });
  const page2 = await startChatServer({ agenthostUrl: upstream.url, authSecret: SCRIPTED_TOKEN, userId: "ui-user", host: "127.0.0.1", port: 0 });
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_WAIT_MS);
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
      assert.equal((await bubble.locator("pre code").textContent())?.trim(), "const x = 1 < 2;");
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
      // Queued for a feedback destination: recorded, so thanked.
      assert.equal(await page.textContent(".feedback-note"), "Thanks for the feedback.");
      assert.equal(await page.locator(".feedback-down.chosen").count(), 1);
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
      // What arrived stays, marked: the answer is not complete.
      assert.equal((await page.locator(".msg.ai.interrupted p").textContent())?.trim(), "Half an answer");
      assert.equal(await page.locator(".msg.ai.interrupted .failed-note").textContent(), "Interrupted");
      assert.equal(await page.locator(".msg.human.not-sent").count(), 0, "the message reached the agent");
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
