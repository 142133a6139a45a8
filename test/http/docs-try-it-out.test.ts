// The interactive API reference in a real browser (Debian's Chromium driven by playwright-core),
// against the service in token mode with the fake model: the page and everything it loads come
// without a token, it lists the operations in the document's order, and "Try it out" then "Execute",
// with nothing typed but the token, is answered 200 (a body, a path parameter, a query parameter).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, test } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { listed, type ReferenceDocument } from "../helpers/api-reference.ts";
import { startService, type RunningService } from "../helpers/service.ts";

const CHROMIUM = "/usr/bin/chromium";
/** CI installs Chromium (.ci/run); a machine without it skips the page, as the chat page's tests do. */
const browserSkip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed`;
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
/** A hang bound for the page on a loaded 2-core machine, no speed target. */
const WAIT_MS = 60_000;
const TOKEN = "docs-page-secret-41c7";

let service: RunningService;
let browser: Browser;
let page: Page;
/** Every answer the page received from the service: path and status. */
const answers: Array<{ path: string; status: number }> = [];

before(async () => {
  if (browserSkip) return;
  service = await startService({ AUTH_MODE: "token", AUTH_SECRET: TOKEN });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.setDefaultTimeout(WAIT_MS);
  page.on("response", (response) => {
    const url = new URL(response.url());
    if (url.origin === service.url) answers.push({ path: url.pathname, status: response.status() });
  });
  await page.goto(`${service.url}/docs`);
  await page.waitForSelector(".opblock");
});

after(async () => {
  await browser?.close();
  await service?.close();
});

test("the page, its files and its icon load without a token", { skip: browserSkip }, async () => {
  assert.ok(answers.some((answer) => answer.path === "/openapi.json" && answer.status === 200));
  assert.ok(answers.some((answer) => answer.path.startsWith("/docs/assets/")));
  assert.deepEqual(answers.filter((answer) => answer.status >= 400), []);
  // What a browser asks for on its own, outside the page.
  const icon = await page.evaluate(async () => (await fetch("/favicon.ico")).status);
  assert.equal(icon, 204);
});

test("the operations are shown in the document's order, agenthost's own first", { skip: browserSkip }, async () => {
  const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as ReferenceDocument;
  const shown = await page.$$eval(".opblock", (blocks) =>
    blocks.map((block) => `${block.querySelector(".opblock-summary-method")?.textContent} ${block.querySelector(".opblock-summary-path")?.getAttribute("data-path")}`),
  );
  assert.deepEqual(shown, listed(document).map(({ method, path }) => `${method} ${path}`));
  assert.deepEqual(shown.slice(0, 3), ["POST /invoke", "POST /{agent_id}/invoke", "POST /stream"]);
});

/** Open an operation, press "Try it out" and "Execute" without changing anything; the status the page shows. */
async function tryItOut(method: string, path: string): Promise<string> {
  const block = page.locator(`.opblock-${method}`).filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) });
  await block.locator(".opblock-summary-control").click();
  await block.locator(".try-out__btn").click();
  await block.locator(".btn.execute").click();
  const status = block.locator(".live-responses-table .response .response-col_status");
  await status.waitFor();
  return (await status.innerText()).trim();
}

test("'Try it out' works on the first click once the token is given", { skip: browserSkip }, async () => {
  await page.evaluate((token) => (window as unknown as { ui: { preauthorizeApiKey(name: string, value: string): void } }).ui.preauthorizeApiKey("bearer", token), TOKEN);
  assert.equal(await tryItOut("post", "/invoke"), "200", "a body");
  assert.equal(await tryItOut("post", "/{agent_id}/invoke"), "200", "a body and the agent's path segment");
  assert.equal(await tryItOut("get", "/history"), "200", "a required query parameter");
  assert.equal(await tryItOut("delete", "/history/clear"), "200", "a body on DELETE");
  assert.equal(await tryItOut("post", "/threads"), "200", "a LangGraph Platform body");
  assert.equal(await tryItOut("get", "/threads/{thread_id}"), "200", "a LangGraph Platform path parameter, the thread just created");
});
