import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { humanMessageFrom, toChatMessage } from "../../src/runs/message-mapping.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { PROTOCOLS, run } from "../fixtures/providers/events.ts";
import { FAKE_PROVIDER_KEY, startFakeProvider, type FakeProvider } from "../fixtures/providers/fake-provider.ts";

/** Multimodal input: limits (413), validation (422), and each provider's wire format; URLs are never fetched. */

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const PDF = "JVBERi0xLjQKJcTl8uXrp/Og0MTGCg==";

describe("multimodal input", { concurrency: false }, () => {
  let provider: FakeProvider;
  let service: RunningService;
  let imageHost: Server;
  let imageHits = 0;
  let imageUrl: string;

  before(async () => {
    imageHost = createServer((_req, res) => {
      imageHits++;
      res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from(PNG, "base64"));
    });
    await new Promise<void>((resolve) => imageHost.listen(0, "127.0.0.1", resolve));
    imageUrl = `http://127.0.0.1:${(imageHost.address() as AddressInfo).port}/cat.png`;
    provider = await startFakeProvider();
    service = await startService({
      MULTIMODAL_MAX_ATTACHMENTS: "3",
      MODEL_CONFIGS: JSON.stringify({
        openai: { provider: "openai", model: "behave-ok", base_url: `${provider.url}/v1`, api_key: FAKE_PROVIDER_KEY },
        anthropic: { provider: "anthropic", model: "behave-ok", base_url: provider.url, api_key: FAKE_PROVIDER_KEY },
        google: { provider: "google", model: "gemini-2.0-flash", base_url: provider.url, api_key: FAKE_PROVIDER_KEY },
      }),
    });
  });
  after(async () => {
    await service?.close();
    await provider?.close();
    await new Promise<void>((resolve) => imageHost.close(() => resolve()));
  });

  const image = () => ({ type: "image", url: imageUrl });

  test("more attachments than MULTIMODAL_MAX_ATTACHMENTS is 413 before any stream frame; text blocks do not count", async () => {
    for (const protocol of PROTOCOLS) {
      const tooMany = await run(service, protocol, "chatbot-agent", { input: { message: [{ type: "text", text: "Look" }, image(), image(), image(), image()] } });
      assert.equal(tooMany.status, 413, protocol);
      assert.equal(tooMany.body?.error_code, "payload_too_large");
      assert.match(String(tooMany.body?.detail), /more than 3 attachments \(MULTIMODAL_MAX_ATTACHMENTS\)/);
    }
    const within = await run(service, "invoke", "chatbot-agent", {
      input: { message: [{ type: "text", text: "a" }, { type: "text", text: "b" }, image(), image(), { type: "image", data: PNG, mime_type: "image/png" }] },
    });
    assert.equal(within.status, 200, within.text);
  });

  test("malformed blocks are 422", async () => {
    const malformed: unknown[] = [
      [],
      [{ type: "image" }],
      [{ type: "image", data: PNG }],
      [{ type: "image", url: imageUrl, data: PNG, mime_type: "image/png" }],
      [{ type: "image", url: "file:///etc/passwd" }],
      [{ type: "image", data: PNG, mime_type: "text/plain" }],
      [{ type: "video", data: "AAAA" }],
      [{ type: "sticker", data: "AAAA", mime_type: "image/png" }],
      [{ type: "text" }],
      [{ type: "text", text: "hi", extra: true }],
      [{ type: "file", data: PDF, mime_type: "application/pdf", filename: "" }],
      [{ type: "image", base64: PNG, data: PNG, mime_type: "image/png" }],
      [{ type: "audio", base64: "AAAA", mime_type: null }],
      [{ type: "file", url: "ftp://example.invalid/report.pdf" }],
      [{ type: "image", source_type: "text", text: "hello" }],
      [{ type: "image", source_type: "url", data: PNG, mime_type: "image/png" }],
      [{ type: "file", file_id: "file-a", id: "file-b" }],
      [{ type: "file", file_id: "file-a", url: imageUrl }],
      [{ type: "image", source: { type: "base64", data: PNG } }],
      [{ type: "image", source: { type: "text", media_type: "text/plain", data: "hi" } }],
      [{ type: "image", source: { type: "base64", media_type: "image/png", data: PNG }, mime_type: "image/jpeg" }],
      [{ type: "file", file_id: "file-a", metadata: { lc: 1, type: "secret", id: ["KEY"] } }],
      [{ type: "file", file_id: "file-a", filename: "a.pdf", metadata: { filename: "b.pdf" } }],
    ];
    for (const message of malformed) {
      const response = await call(service, "POST", "/chatbot-agent/invoke", { input: { message } });
      assert.equal(response.status, 422, JSON.stringify(message));
      assert.equal(((await response.json()) as { error_code: string }).error_code, "validation_failed");
    }
  });

  test("a path and a relative URL are refused with the reason; a block without a source names it with the right article", async () => {
    const refused = async (message: unknown[]) => {
      const response = await call(service, "POST", "/chatbot-agent/invoke", { input: { message } });
      assert.equal(response.status, 422, JSON.stringify(message));
      const body = (await response.json()) as { detail: string; error_code: string };
      assert.equal(body.error_code, "validation_failed");
      return body.detail;
    };
    for (const block of [{ type: "file", path: "/etc/passwd" }, { type: "image", path: "cat.png", mime_type: "image/png" }]) {
      assert.match(await refused([block]), /path: .*never reads its own files for a caller/);
    }
    for (const url of ["/cat.png", "cat.png", "../cat.png", "//cdn.example/cat.png"]) {
      assert.match(await refused([{ type: "image", url }]), /url: a relative URL is refused/, url);
      assert.match(await refused([{ type: "image", source_type: "url", url }]), /url: a relative URL is refused/, url);
      assert.match(await refused([{ type: "image", source: { type: "url", url } }]), /source\.url: a relative URL is refused/, url);
    }
    assert.match(await refused([{ type: "image", url: "file:///etc/passwd" }]), /url: must be an http\(s\) or data: URL/);
    assert.match(await refused([{ type: "image" }]), /^input\.message\.0: an image block needs exactly one source/);
    assert.match(await refused([{ type: "audio" }]), /an audio block needs exactly one source/);
    assert.match(await refused([{ type: "file" }]), /a file block needs exactly one source/);
  });

  test("LangChain's standard blocks, provider file ids and Anthropic's source object count as attachments", async () => {
    const message = [
      { type: "image", source_type: "url", url: imageUrl },
      { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
      { type: "file", file_id: "file-abc" },
      { type: "file", source_type: "id", id: "file-def" },
    ];
    const tooMany = await call(service, "POST", "/chatbot-agent/invoke", { input: { message } });
    assert.equal(tooMany.status, 413);
    assert.match(((await tooMany.json()) as { detail: string }).detail, /more than 3 attachments/);
    const within = await call(service, "POST", "/chatbot-agent/invoke", { input: { message: message.slice(1) } });
    assert.equal(within.status, 200, await within.text());
  });

  test("blocks reach each provider in its own format; the service never fetches an image URL", async () => {
    const blocks = [
      { type: "text", text: "What is in these?" },
      image(),
      // base64 is the spec's field name; data is its alias.
      { type: "image", base64: PNG, mime_type: "image/png" },
      { type: "file", data: PDF, mime_type: "application/pdf", filename: "report.pdf" },
    ];
    const sent = async (key: string) => {
      const before = provider.requests.length;
      const response = await call(service, "POST", "/chatbot-agent/invoke", { input: { message: blocks }, model_config_key: key });
      assert.equal(response.status, 200, await response.text());
      return provider.requests.slice(before)[0]!.body;
    };

    const openai = (await sent("openai")).messages as Array<{ role: string; content: unknown }>;
    assert.deepEqual(openai.at(-1), {
      role: "user",
      content: [
        { type: "text", text: "What is in these?" },
        { type: "image_url", image_url: { url: imageUrl } },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: "file", file: { file_data: `data:application/pdf;base64,${PDF}`, filename: "report.pdf" } },
      ],
    });

    const anthropic = (await sent("anthropic")).messages as Array<{ role: string; content: unknown }>;
    assert.deepEqual(anthropic.at(-1), {
      role: "user",
      content: [
        { type: "text", text: "What is in these?" },
        { type: "image", source: { type: "url", url: imageUrl } },
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
        { type: "document", source: { type: "base64", media_type: "application/pdf", data: PDF } },
      ],
    });

    const google = (await sent("google")).contents as Array<{ role: string; parts: Array<Record<string, unknown>> }>;
    const parts = google.at(-1)!.parts;
    assert.deepEqual(parts[0], { text: "What is in these?" });
    assert.equal((parts[1]!.fileData as { fileUri: string }).fileUri, imageUrl);
    assert.deepEqual(parts[2], { inlineData: { mimeType: "image/png", data: PNG } });
    assert.deepEqual(parts[3], { inlineData: { mimeType: "application/pdf", data: PDF } });

    assert.equal(imageHits, 0, "the image URL was fetched");
  });

  test("LangChain's source_type blocks, provider file ids and Anthropic's source object reach OpenAI and Anthropic in their own format", async () => {
    // Three attachments a request (MULTIMODAL_MAX_ATTACHMENTS=3).
    const requests = [
      [
        { type: "text", text: "Compare" },
        { type: "image", source_type: "url", url: imageUrl },
        { type: "image", source_type: "base64", data: PNG, mime_type: "image/png" },
        { type: "file", source_type: "id", id: "file-by-source-type" },
      ],
      [
        { type: "image", source: { type: "url", url: imageUrl } },
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
        { type: "file", source: { type: "file", file_id: "file-by-source" } },
      ],
      [
        { type: "file", file_id: "file-by-file-id" },
        { type: "file", source_type: "base64", data: PDF, mime_type: "application/pdf", metadata: { filename: "report.pdf" } },
        { type: "image", id: "file-image-by-id" },
      ],
    ];
    const sent = async (key: string, message: unknown[]) => {
      const before = provider.requests.length;
      const response = await call(service, "POST", "/chatbot-agent/invoke", { input: { message }, model_config_key: key });
      assert.equal(response.status, 200, await response.text());
      const messages = provider.requests.slice(before)[0]!.body.messages as Array<{ role: string; content: unknown }>;
      return messages.at(-1);
    };

    const dataUrl = `data:image/png;base64,${PNG}`;
    assert.deepEqual(await sent("openai", requests[0]!), {
      role: "user",
      content: [
        { type: "text", text: "Compare" },
        { type: "image_url", image_url: { url: imageUrl } },
        { type: "image_url", image_url: { url: dataUrl } },
        { type: "file", file: { file_id: "file-by-source-type" } },
      ],
    });
    assert.deepEqual(await sent("openai", requests[1]!), {
      role: "user",
      content: [
        { type: "image_url", image_url: { url: imageUrl } },
        { type: "image_url", image_url: { url: dataUrl } },
        { type: "file", file: { file_id: "file-by-source" } },
      ],
    });
    // Chat Completions takes no image by file id: LangChain leaves it out, as it does for any caller.
    assert.deepEqual(await sent("openai", requests[2]!), {
      role: "user",
      content: [
        { type: "file", file: { file_id: "file-by-file-id" } },
        { type: "file", file: { file_data: `data:application/pdf;base64,${PDF}`, filename: "report.pdf" } },
      ],
    });

    const imageBytes = { type: "base64", media_type: "image/png", data: PNG };
    assert.deepEqual(await sent("anthropic", requests[0]!), {
      role: "user",
      content: [
        { type: "text", text: "Compare" },
        { type: "image", source: { type: "url", url: imageUrl } },
        { type: "image", source: imageBytes },
        { type: "document", source: { type: "file", file_id: "file-by-source-type" } },
      ],
    });
    assert.deepEqual(await sent("anthropic", requests[1]!), {
      role: "user",
      content: [
        { type: "image", source: { type: "url", url: imageUrl } },
        { type: "image", source: imageBytes },
        { type: "document", source: { type: "file", file_id: "file-by-source" } },
      ],
    });
    assert.deepEqual(await sent("anthropic", requests[2]!), {
      role: "user",
      content: [
        { type: "document", source: { type: "file", file_id: "file-by-file-id" } },
        { type: "document", source: { type: "base64", media_type: "application/pdf", data: PDF } },
        { type: "image", source: { type: "file", file_id: "file-image-by-id" } },
      ],
    });
    assert.equal(imageHits, 0, "the image URL was fetched");
  });

  test("history keeps such blocks: a run's message and an append read back in the API's shape, which appends again unchanged", async () => {
    const message = [
      { type: "text", text: "Keep these" },
      { type: "image", source_type: "base64", data: PNG, mime_type: "image/png" },
      { type: "file", source: { type: "file", file_id: "file-kept" } },
      { type: "file", source_type: "url", url: "https://files.example/report.pdf", metadata: { filename: "report.pdf", title: "Q3" } },
    ];
    const expected = [
      { type: "text", text: "Keep these" },
      { type: "image", base64: PNG, mime_type: "image/png" },
      { type: "file", file_id: "file-kept" },
      { type: "file", url: "https://files.example/report.pdf", filename: "report.pdf", metadata: { title: "Q3" } },
    ];
    const first = async (thread: string) => {
      const response = await call(service, "GET", `/chatbot-agent/history?thread_id=${thread}`);
      assert.equal(response.status, 200);
      return ((await response.json()) as { messages: Array<{ type: string; content: unknown }> }).messages[0]!;
    };

    const ran = await call(service, "POST", "/chatbot-agent/invoke", { input: { message }, thread_id: "standard-blocks-run" });
    assert.equal(ran.status, 200, await ran.text());
    const stored = await first("standard-blocks-run");
    assert.equal(stored.type, "human");
    assert.deepEqual(stored.content, expected);

    const appended = await call(service, "POST", "/chatbot-agent/history/add_messages", {
      thread_id: "standard-blocks-append",
      messages: [{ type: "human", content: message }],
    });
    assert.equal(appended.status, 201, await appended.text());
    assert.deepEqual((await first("standard-blocks-append")).content, expected);

    const again = await call(service, "POST", "/chatbot-agent/history/add_messages", {
      thread_id: "standard-blocks-again",
      messages: [{ type: "human", content: expected }],
    });
    assert.equal(again.status, 201, await again.text());
    assert.deepEqual((await first("standard-blocks-again")).content, expected);
  });

  test("messages read back carry the API's block shape (base64, mime_type, url)", () => {
    const blocks = [
      { type: "text" as const, text: "hi" },
      { type: "image" as const, base64: PNG, mime_type: "image/png" },
      { type: "file" as const, base64: PDF, mime_type: "application/pdf", filename: "report.pdf" },
      { type: "audio" as const, url: "https://example.invalid/a.mp3", mime_type: "audio/mpeg" },
      { type: "file" as const, file_id: "file-abc" },
      { type: "video" as const, file_id: "file-def", mime_type: "video/mp4", metadata: { fps: 1 } },
    ];
    const message = toChatMessage(humanMessageFrom(blocks), { threadId: "t", runId: null });
    assert.deepEqual(message.content, blocks);
  });
});
