// React `useStream` (@langchain/langgraph-sdk/react) in a real browser against the real service, on
// memory, on SQLite, and with two workers on PostgreSQL and Redis:
// a small page (test/fixtures/use-stream-page/app.ts), bundled here with esbuild, is served from an
// origin of its own, so every call useStream makes to agenthost crosses origins under
// CORS_ALLOW_ORIGINS. With the fake model's chatbot-agent it sends a message and shows the streamed
// answer, then a reload restores the conversation from the thread's history; with ask-name it shows
// the interrupt's question, resumes with the answer, and a reload restores the whole exchange (also
// when the page is reloaded while the question is still waiting). Every request carries X-Api-Key,
// each preflight is answered before authentication, and the page logs no error.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { after, before, test, type TestContext } from "node:test";
import { build } from "esbuild";
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from "playwright-core";
import { FAKE_MODEL_ANSWER } from "../../src/models/fake-chat-model.ts";
import { Redis } from "ioredis";
import { startService } from "../helpers/service.ts";
import { REDIS_URL } from "../helpers/redis.ts";
import { postgresBackend, sqliteBackend, type BackendUnderTest } from "../http/history-backends.ts";
import { startCluster } from "../cluster/cluster-helper.ts";

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
const TOKEN = "use-stream-secret-5d2e81";
const ASK_NAME = "ask-name";
const CHATBOT = "chatbot-agent";
/** Generous: a loaded 2-core machine runs the service, the page server and Chromium at once. */
const WAIT_MS = 30_000;
const PAGE_SOURCE = fileURLToPath(new URL("../fixtures/use-stream-page/app.ts", import.meta.url));

const INDEX_HTML = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>useStream against agenthost</title><link rel="icon" href="data:,"></head>
<body><div id="root"></div><script type="module" src="/app.js"></script></body>
</html>
`;

/** A static server for the page: its own loopback port, so its own origin. */
interface PageServer {
  readonly origin: string;
  close(): Promise<void>;
}

async function servePage(bundle: string): Promise<PageServer> {
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://page.invalid").pathname;
    if (req.method === "GET" && path === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(INDEX_HTML);
    } else if (req.method === "GET" && path === "/app.js") {
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "no-store" }).end(bundle);
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The page, bundled for the browser into memory (React's development build: its warnings are errors to see). */
async function bundlePage(): Promise<string> {
  const result = await build({
    entryPoints: [PAGE_SOURCE],
    bundle: true,
    write: false,
    platform: "browser",
    format: "esm",
    target: "es2022",
    define: { "process.env.NODE_ENV": '"development"' },
    logLevel: "silent",
  });
  assert.deepEqual(result.warnings, []);
  const [output] = result.outputFiles;
  assert.ok(output, "esbuild wrote the bundle");
  return output.text;
}

/** A running agenthost the page talks to: its URL and its log lines. */
interface Service {
  readonly url: string;
  readonly logs: ReadonlyArray<Record<string, unknown>>;
  close(): Promise<void>;
}

/** The service's settings for the page: the key, CORS for the page's origin, and ask-name beside the built-in agents. */
function serviceEnv(): Record<string, string> {
  return { AUTH_SECRET: TOKEN, CORS_ALLOW_ORIGINS: pageServer.origin, AGENT_PATHS: JSON.stringify(["./test/fixtures/interrupt-agents.ts:askName"]) };
}

/** One process on a backend (memory, or a database that `backend` cleans up after). */
async function inProcess(backend?: BackendUnderTest): Promise<Service> {
  const running = await startService({ ...backend?.env, ...serviceEnv() });
  return {
    url: running.url,
    logs: running.logs,
    close: async () => {
      await running.close();
      await backend?.cleanup();
    },
  };
}

/** bin/agenthost with two workers on PostgreSQL and Redis: the page's calls land on either worker. */
async function twoWorkers(): Promise<Service> {
  const backend = postgresBackend();
  const prefix = `agenthost-test:${crypto.randomUUID()}`;
  const cluster = await startCluster({ ...backend.env, REDIS_URL, REDIS_KEY_PREFIX: prefix, WEB_CONCURRENCY: "2", ...serviceEnv() });
  return {
    url: cluster.url,
    logs: cluster.logs,
    close: async () => {
      await cluster.stop();
      await backend.cleanup();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    },
  };
}

/** Where the scenarios run: every backend, and two workers sharing PostgreSQL and Redis. */
const TARGETS: ReadonlyArray<{ readonly name: string; start(): Promise<Service> }> = [
  { name: "memory", start: () => inProcess() },
  { name: "SQLite", start: () => inProcess(sqliteBackend()) },
  { name: "PostgreSQL, two workers and Redis", start: twoWorkers },
];

/** The service of the scenarios running now. */
let service: Service;
let pageServer: PageServer;
let browser: Browser | undefined;
let context: BrowserContext;

const browserSkip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed`;

before(async () => {
  const bundled = bundlePage();
  pageServer = await servePage(await bundled);
  if (browserSkip) return;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  context = await browser.newContext({ viewport: { width: 900, height: 700 } });
  context.setDefaultTimeout(WAIT_MS);
});

after(async () => {
  await context?.close();
  await browser?.close();
  await pageServer?.close();
});

/** What the browser sent to agenthost, and what the page said on its console. */
interface Observed {
  readonly requests: { method: string; path: string; headers: Record<string, string>; body: string | null }[];
  readonly responses: { method: string; path: string; status: number; headers: Record<string, string> }[];
  readonly problems: string[];
}

function observe(page: Page): Observed {
  const observed: Observed = { requests: [], responses: [], problems: [] };
  const toService = (url: string) => new URL(url).origin === service.url;
  page.on("request", (request) => {
    if (!toService(request.url())) return;
    observed.requests.push({
      method: request.method(),
      path: new URL(request.url()).pathname,
      headers: request.headers(),
      body: request.postData(),
    });
  });
  page.on("response", (response) => {
    if (!toService(response.url())) return;
    observed.responses.push({
      method: response.request().method(),
      path: new URL(response.url()).pathname,
      status: response.status(),
      headers: response.headers(),
    });
  });
  page.on("requestfailed", (request) => {
    // A stream useStream itself aborts is not a failure; there is none in these scenarios.
    observed.problems.push(`request failed: ${request.method()} ${request.url()}: ${request.failure()?.errorText ?? "?"}`);
  });
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") observed.problems.push(`console.${message.type()}: ${message.text()}`);
  });
  page.on("pageerror", (error) => observed.problems.push(`page error: ${error.message}`));
  return observed;
}

/** A new tab, closed when `t` ends (passed or not). */
async function openPage(t: TestContext): Promise<Page> {
  const page = await context.newPage();
  t.after(() => page.close());
  return page;
}

function pageUrl(assistantId: string, threadId?: string): string {
  const url = new URL("/", pageServer.origin);
  url.searchParams.set("apiUrl", service.url);
  url.searchParams.set("apiKey", TOKEN);
  url.searchParams.set("assistantId", assistantId);
  if (threadId) url.searchParams.set("threadId", threadId);
  return url.href;
}

const messages = (page: Page) => page.getByTestId("message");

/** The messages shown, as `type: text`. */
async function shown(page: Page): Promise<string[]> {
  return messages(page).evaluateAll((nodes) => nodes.map((node) => `${node.getAttribute("data-type")}: ${node.textContent ?? ""}`));
}

/** Wait until the page shows exactly `count` messages and loads nothing. */
async function settled(page: Page, observed: Observed, count: number): Promise<void> {
  if (count > 0) await until(page, observed, messages(page).nth(count - 1));
  await page.locator(`[data-testid=chat][data-loading=false][data-thread-loading=false]`).waitFor();
  await page.waitForFunction((n) => document.querySelectorAll("[data-testid=message]").length === n, count, { timeout: WAIT_MS });
  await page.locator(`[data-testid=chat][data-loading=false][data-thread-loading=false]`).waitFor();
}

/**
 * Wait until the page shows `target`; fail at once, with what the page logged, if it shows an error
 * instead (or nothing in time).
 */
async function until(page: Page, observed: Observed, target: Locator): Promise<void> {
  const error = page.getByTestId("error");
  try {
    await target.or(error).first().waitFor();
  } catch (cause) {
    throw new Error(`${String(cause)}\nWhat the page logged: ${JSON.stringify(observed.problems, null, 2)}`, { cause });
  }
  if ((await error.count()) > 0) {
    assert.fail(`The page shows an error: ${await error.textContent()}\nWhat the page logged: ${JSON.stringify(observed.problems, null, 2)}`);
  }
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByTestId("input").fill(text);
  await page.getByTestId("send").click();
}

/** The thread the page wrote into its URL. */
function threadOf(page: Page): string {
  return new URL(page.url()).searchParams.get("threadId") ?? "";
}

/** Every request the browser sent to agenthost carried the key; every answer allowed this origin; nothing went wrong. */
function assertClean(observed: Observed): void {
  assert.deepEqual(observed.problems, [], "no console errors, page errors or failed requests");
  assert.ok(observed.requests.length > 0);
  for (const request of observed.requests) {
    if (request.method === "OPTIONS") continue; // a preflight carries no credentials
    assert.equal(request.headers["x-api-key"], TOKEN, `${request.method} ${request.path} carried X-Api-Key`);
  }
  for (const response of observed.responses) {
    assert.ok(response.status >= 200 && response.status < 300, `${response.method} ${response.path}: ${response.status}`);
    assert.equal(response.headers["access-control-allow-origin"], pageServer.origin, `${response.method} ${response.path}`);
  }
}

/** The requests made, as `METHOD /path` with the thread id replaced by {thread}. */
function calls(observed: Observed, threadId: string): string[] {
  return observed.requests.map((request) => `${request.method} ${request.path.replace(threadId, "{thread}")}`);
}

for (const target of TARGETS) {
  test(`React useStream from another origin against agenthost (${target.name})`, { skip: browserSkip }, async (t) => {
    const running = await target.start();
    service = running;
    t.after(() => running.close());
    await t.test("chatbot-agent: a message sent through useStream shows the streamed answer", async (st) => {
      const page = await openPage(st);
      const observed = observe(page);
      await page.goto(pageUrl(CHATBOT));
      await settled(page, observed, 0);
      await send(page, "Hello from React");
      await until(page, observed, messages(page).filter({ hasText: FAKE_MODEL_ANSWER }));
      await settled(page, observed, 2);
      assert.deepEqual(await shown(page), ["human: Hello from React", `ai: ${FAKE_MODEL_ANSWER}`]);
      const threadId = threadOf(page);
      assert.match(threadId, /^[0-9a-f-]{36}$/);
      assert.equal(await page.getByTestId("chat").getAttribute("data-thread-id"), threadId);
      assert.equal(await page.getByTestId("error").count(), 0);
      assert.equal(await page.getByTestId("interrupt").count(), 0);

      const made = calls(observed, threadId);
      assert.equal(made[0], "POST /threads", made.join());
      assert.ok(made.includes("POST /threads/{thread}/runs/stream"), made.join());
      assert.ok(made.includes("POST /threads/{thread}/history"), `the history is read again after the run: ${made.join()}`);
      const run = observed.requests.find((request) => request.path.endsWith("/runs/stream"));
      const body = JSON.parse(run?.body ?? "{}") as { assistant_id?: string; input?: unknown; stream_mode?: string[] };
      assert.equal(body.assistant_id, CHATBOT);
      assert.deepEqual(body.input, { messages: [{ type: "human", content: "Hello from React" }] });
      assert.ok(body.stream_mode?.includes("messages-tuple") && body.stream_mode.includes("values"), JSON.stringify(body.stream_mode));
      const streamed = observed.responses.find((response) => response.path.endsWith("/runs/stream"));
      assert.match(streamed?.headers["content-type"] ?? "", /^text\/event-stream/);
      assertClean(observed);

      await st.test("a reload opens the thread from the URL and shows both messages from its history", async () => {
        const reloaded = observe(page);
        await page.reload();
        await settled(page, reloaded, 2);
        assert.equal(threadOf(page), threadId);
        assert.deepEqual(await shown(page), ["human: Hello from React", `ai: ${FAKE_MODEL_ANSWER}`]);
        assert.equal(await page.getByTestId("status").textContent(), "Idle");
        assert.deepEqual(calls(reloaded, threadId), ["POST /threads/{thread}/history"]);
        assert.equal(reloaded.requests[0]?.body, JSON.stringify({ limit: 10 }));
        assertClean(reloaded);
      });
    });

    await t.test("ask-name: the interrupt's question is shown, the answer resumes the run, and a reload shows the whole exchange", async (st) => {
      const page = await openPage(st);
      const observed = observe(page);
      await page.goto(pageUrl(ASK_NAME));
      await settled(page, observed, 0);
      await send(page, "Hi");
      await until(page, observed, page.getByTestId("interrupt-value").filter({ hasText: "What is your name?" }));
      await settled(page, observed, 1);
      assert.equal(await page.getByTestId("interrupt-value").textContent(), "What is your name?");
      assert.deepEqual(await shown(page), ["human: Hi"]);
      const threadId = threadOf(page);
      assert.match(threadId, /^[0-9a-f-]{36}$/);

      await page.getByTestId("resume-input").fill("Ada");
      await page.getByTestId("resume").click();
      await until(page, observed, messages(page).filter({ hasText: "Hello, Ada!" }));
      await settled(page, observed, 2);
      assert.deepEqual(await shown(page), ["human: Hi", "ai: Hello, Ada!"]);
      await page.getByTestId("interrupt").waitFor({ state: "detached" });

      const runs = observed.requests.filter((request) => request.path.endsWith("/runs/stream"));
      assert.equal(runs.length, 2);
      const resumed = JSON.parse(runs[1]?.body ?? "{}") as { assistant_id?: string; command?: unknown; input?: unknown };
      assert.equal(resumed.assistant_id, ASK_NAME);
      assert.deepEqual(resumed.command, { resume: "Ada" });
      assert.equal(resumed.input, undefined);
      assertClean(observed);

      const reloaded = observe(page);
      await page.reload();
      await settled(page, reloaded, 2);
      assert.equal(threadOf(page), threadId);
      assert.deepEqual(await shown(page), ["human: Hi", "ai: Hello, Ada!"]);
      assert.equal(await page.getByTestId("interrupt").count(), 0, "no question is waiting any more");
      assertClean(reloaded);
    });

    await t.test("ask-name: a reload while the question waits shows it again from the thread's history; answering it resumes", async (st) => {
      const page = await openPage(st);
      const observed = observe(page);
      await page.goto(pageUrl(ASK_NAME));
      await settled(page, observed, 0);
      await send(page, "Hello again");
      await until(page, observed, page.getByTestId("interrupt-value").filter({ hasText: "What is your name?" }));
      await settled(page, observed, 1);
      const threadId = threadOf(page);

      await page.reload();
      await settled(page, observed, 1);
      assert.equal(threadOf(page), threadId);
      assert.deepEqual(await shown(page), ["human: Hello again"]);
      await until(page, observed, page.getByTestId("interrupt-value").filter({ hasText: "What is your name?" }));

      await page.getByTestId("resume-input").fill("Grace");
      await page.getByTestId("resume").click();
      await until(page, observed, messages(page).filter({ hasText: "Hello, Grace!" }));
      await settled(page, observed, 2);
      assert.deepEqual(await shown(page), ["human: Hello again", "ai: Hello, Grace!"]);
      await page.getByTestId("interrupt").waitFor({ state: "detached" });
      assertClean(observed);
    });

    await t.test("the service answered each preflight before authentication, and nothing else failed", () => {
      const requests = service.logs.filter((line) => line.msg === "request");
      const preflights = requests.filter((line) => line.method === "OPTIONS");
      assert.ok(preflights.length > 0, "the JSON requests with X-Api-Key were preflighted");
      for (const line of preflights) {
        assert.equal(line.route, "preflight");
        assert.equal(line.status, 204);
      }
      const failed = requests.filter((line) => typeof line.status !== "number" || line.status >= 400);
      assert.deepEqual(failed, []);
      assert.deepEqual(service.logs.filter((line) => (line.level as number) >= 50), []);
    });
  });
}
