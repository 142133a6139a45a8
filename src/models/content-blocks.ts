import type { ContentBlock } from "../contract/messages.ts";

/**
 * The API's content blocks (`input.message` as a list) as LangChain's standard (v1) content blocks,
 * which @langchain/openai, @langchain/anthropic and @langchain/google-genai each turn into their
 * provider's format when the message is marked `output_version: "v1"`. Every form the contract
 * accepts (LangChain's `source_type` data blocks, provider file ids, Anthropic's `source` object)
 * arrives here as one of url, base64 or file_id, so this is the translation LangChain's own
 * `contentBlocks` does for those forms: url → `url`, bytes → `data`, a file id → `fileId`. URLs
 * stay URLs: the service never fetches them; the provider does, under its own rules.
 */
export type LangChainBlock = Record<string, unknown> & { type: string };

export function toLangChainBlocks(blocks: readonly ContentBlock[]): LangChainBlock[] {
  return blocks.map((block): LangChainBlock => {
    if (block.type === "text") return { type: "text", text: block.text };
    const out: LangChainBlock = { type: block.type };
    if (block.url !== undefined) out.url = block.url;
    else if (block.base64 !== undefined) out.data = block.base64;
    else out.fileId = block.file_id;
    if (block.mime_type !== undefined) out.mimeType = block.mime_type;
    // OpenAI needs a file name with a file's bytes; a provider file already has one.
    const filename = block.filename ?? (block.type === "file" && block.file_id === undefined ? "attachment" : undefined);
    if (filename !== undefined || block.metadata !== undefined) {
      out.metadata = { ...block.metadata, ...(filename !== undefined ? { filename } : {}) };
    }
    return out;
  });
}

const MEDIA_TYPES = new Set(["image", "audio", "video", "file"]);

/**
 * The reverse, for messages read back (history, streams): `data` → `base64`, `mimeType` →
 * `mime_type`, `fileId` → `file_id`, the filename hoisted out of the metadata (what else the
 * metadata holds stays there), so a block reads back in a form the API accepts again.
 */
export function toApiBlocks(content: readonly unknown[]): Array<Record<string, unknown>> {
  return content.map((item) => {
    if (typeof item !== "object" || item === null) return { type: "text", text: String(item) };
    const block = { ...(item as Record<string, unknown>) };
    if (!MEDIA_TYPES.has(String(block.type))) return block;
    rename(block, "data", "base64");
    rename(block, "mimeType", "mime_type");
    rename(block, "fileId", "file_id");
    const metadata = block.metadata;
    if (typeof metadata === "object" && metadata !== null && !Array.isArray(metadata)) {
      const { filename, ...rest } = metadata as Record<string, unknown>;
      if (typeof filename === "string") {
        block.filename = filename;
        if (Object.keys(rest).length > 0) block.metadata = rest;
        else delete block.metadata;
      }
    }
    return block;
  });
}

function rename(block: Record<string, unknown>, from: string, to: string): void {
  if (from in block && !(to in block)) {
    block[to] = block[from];
    delete block[from];
  }
}

/** Marks a human message whose content is standard blocks, so every provider converts them. */
export const STANDARD_CONTENT_METADATA = { output_version: "v1" } as const;
