import type { ContentBlock } from "../contract/messages.ts";

/**
 * The API's content blocks (`input.message` as a list) as LangChain's standard (v1) content blocks,
 * which @langchain/openai, @langchain/anthropic and @langchain/google-genai each turn into their
 * provider's format when the message is marked `output_version: "v1"`. Image URLs stay URLs: the
 * service never fetches them; the provider does, under its own rules.
 */
export type LangChainBlock = Record<string, unknown> & { type: string };

export function toLangChainBlocks(blocks: readonly ContentBlock[]): LangChainBlock[] {
  return blocks.map((block): LangChainBlock => {
    if (block.type === "text") return { type: "text", text: block.text };
    const out: LangChainBlock = block.url !== undefined ? { type: block.type, url: block.url } : { type: block.type, data: block.base64 };
    if (block.mime_type !== undefined) out.mimeType = block.mime_type;
    if (block.type === "file") out.metadata = { filename: block.filename ?? "attachment" };
    else if (block.filename !== undefined) out.metadata = { filename: block.filename };
    return out;
  });
}

const MEDIA_TYPES = new Set(["image", "audio", "video", "file"]);

/** The reverse, for messages read back (history, streams): `data` → `base64`, `mimeType` → `mime_type`, filename hoisted. */
export function toApiBlocks(content: readonly unknown[]): Array<Record<string, unknown>> {
  return content.map((item) => {
    if (typeof item !== "object" || item === null) return { type: "text", text: String(item) };
    const block = { ...(item as Record<string, unknown>) };
    if (!MEDIA_TYPES.has(String(block.type))) return block;
    if ("data" in block && !("base64" in block)) {
      block.base64 = block.data;
      delete block.data;
    }
    if ("mimeType" in block) {
      block.mime_type = block.mimeType;
      delete block.mimeType;
    }
    const metadata = block.metadata as { filename?: unknown } | undefined;
    if (typeof metadata?.filename === "string") {
      block.filename = metadata.filename;
      delete block.metadata;
    }
    return block;
  });
}

/** Marks a human message whose content is standard blocks, so every provider converts them. */
export const STANDARD_CONTENT_METADATA = { output_version: "v1" } as const;
