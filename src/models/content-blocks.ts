import type { ContentBlock } from "../http/schemas.ts";

/**
 * The API's content blocks (`input.message` as a list) as LangChain's standard (v1) content blocks,
 * which @langchain/openai, @langchain/anthropic and @langchain/google-genai each turn into their
 * provider's format when the message is marked `output_version: "v1"`. Image URLs stay URLs: the
 * service never fetches them; the provider does, under its own rules.
 */
export type LangChainBlock = Record<string, unknown> & { type: string };

export function toLangChainBlocks(blocks: readonly ContentBlock[]): LangChainBlock[] {
  return blocks.map((block): LangChainBlock => {
    switch (block.type) {
      case "text":
        return { type: "text", text: block.text };
      case "image":
        return block.url !== undefined ? { type: "image", url: block.url } : { type: "image", data: block.data, mimeType: block.mime_type };
      case "file":
        return { type: "file", data: block.data, mimeType: block.mime_type, metadata: { filename: block.filename ?? "attachment" } };
      default:
        return { type: block.type, data: block.data, mimeType: block.mime_type };
    }
  });
}

/** The reverse, for messages read back (history, streams): `mimeType` → `mime_type`, filename hoisted. */
export function toApiBlocks(content: readonly unknown[]): Array<Record<string, unknown>> {
  return content.map((item) => {
    if (typeof item !== "object" || item === null) return { type: "text", text: String(item) };
    const block = { ...(item as Record<string, unknown>) };
    if (!["image", "audio", "video", "file"].includes(String(block.type))) return block;
    if ("mimeType" in block) {
      block.mime_type = block.mimeType;
      delete block.mimeType;
    }
    const metadata = block.metadata as { filename?: unknown } | undefined;
    if (block.type === "file" && typeof metadata?.filename === "string") {
      block.filename = metadata.filename;
      delete block.metadata;
    }
    return block;
  });
}

/** Marks a human message whose content is standard blocks, so every provider converts them. */
export const STANDARD_CONTENT_METADATA = { output_version: "v1" } as const;
