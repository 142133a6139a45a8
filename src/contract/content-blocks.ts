import { z } from "zod";
import { BOUNDS_NOTE, boundedRecord } from "./json-bounds.ts";
import { optional } from "./fields.ts";
import { namedSchemas } from "./named-schemas.ts";

/**
 * Content blocks of `input.message` and of appended messages. A media block names its content in
 * one of the forms callers build: the API's own (`url`, or `base64` with `mime_type`), LangChain's
 * standard data blocks (`source_type` "url" | "base64" | "id"), a provider file reference
 * (`file_id`, or `id`), or Anthropic's `source` object. All parse to one MediaBlock, which
 * models/content-blocks.ts hands to LangChain as a standard (v1) block. The service never reads a
 * file or fetches a URL for a caller: `path` and relative URLs are refused.
 */

const MEDIA_TYPES = ["image", "file", "audio", "video"] as const;
type MediaType = (typeof MEDIA_TYPES)[number];

/** A media block after validation: one of url, base64 or file_id; aliases and Anthropic's source folded in, nulls gone. */
export interface MediaBlock {
  type: MediaType;
  url?: string | undefined;
  base64?: string | undefined;
  file_id?: string | undefined;
  mime_type?: string | undefined;
  filename?: string | undefined;
  /** LangChain's block metadata, as sent (less the filename, which is `filename`). */
  metadata?: Record<string, unknown> | undefined;
}

const article = (word: string) => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`);

const SCHEME = /^[a-z][a-z\d+.-]*:/i;

/** Why a URL is refused, for the URL at hand: relative, without a host, or of another scheme. */
function urlRefusal(input: unknown): string {
  const value = String(input);
  if (!SCHEME.test(value)) {
    return "a relative URL is refused: the provider fetches the URL and the service never reads its own files for a caller; give an absolute http(s) URL or a data: URL";
  }
  if (/^https?:/i.test(value)) return "must be an absolute http(s) URL with a host, or a data: URL";
  return "must be an http(s) or data: URL: the provider fetches it, and the service never reads files for a caller";
}

const mediaUrl = z
  .string()
  .min(1)
  .regex(/^(https?:\/\/[^/?#\s\\]|data:)/i, { error: (issue) => urlRefusal(issue.input) });

const mimeType = z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, { error: "must be a MIME type such as image/png" });

const fileReference = z.string().min(1).max(1024);

/** Anthropic's `source` object, in the three forms LangChain.js reads from an image or document block. */
const anthropicSourceSchema = z.discriminatedUnion(
  "type",
  [
    z.strictObject({ type: z.literal("base64"), media_type: mimeType, data: z.string().min(1) }),
    z.strictObject({ type: z.literal("url"), url: mediaUrl }),
    z.strictObject({ type: z.literal("file"), file_id: fileReference }),
  ],
  { error: 'must be "base64" (with media_type and data), "url" (with url) or "file" (with file_id)' },
);

const SOURCE_TYPES = ["url", "base64", "id"] as const;

const PATH_REFUSED =
  "a path names a file on the caller's machine, and the service never reads its own files for a caller: send the bytes as base64 with mime_type, or a URL";

const mediaBlockSchema = z
  .strictObject({
    type: z.enum(MEDIA_TYPES),
    url: optional(mediaUrl).describe("The media by an absolute http(s) or data: URL; the provider fetches it, the service never does."),
    base64: optional(z.string().min(1)).describe("The media's bytes, base64-encoded; needs mime_type."),
    data: optional(z.string().min(1)).describe("Alias of base64 (LangChain's name, with source_type \"base64\")."),
    file_id: optional(fileReference).describe("A file already uploaded to the model's provider (its Files API id)."),
    id: optional(fileReference).describe("Alias of file_id (LangChain's name, with source_type \"id\")."),
    source_type: optional(
      z.enum(SOURCE_TYPES, { error: 'must be "url", "base64" or "id" (LangChain\'s data block forms); send text as a text block' }),
    ).describe('LangChain\'s data block form, optional: "url" needs url, "base64" needs data (or base64) and mime_type, "id" needs id (or file_id).'),
    source: optional(anthropicSourceSchema).describe("Anthropic's source object: {type: base64, media_type, data}, {type: url, url} or {type: file, file_id}."),
    mime_type: optional(mimeType),
    filename: optional(z.string().min(1).max(255)),
    metadata: optional(boundedRecord()).describe(`LangChain's block metadata, passed to the model as sent; metadata.filename is the filename. ${BOUNDS_NOTE}`),
    path: z
      .unknown()
      .optional()
      .superRefine((value, ctx) => {
        if (value !== undefined) ctx.addIssue({ code: "custom", message: PATH_REFUSED });
      })
      .describe("Refused: the service never reads its own files for a caller."),
  })
  .superRefine((block, ctx) => {
    const problem = (message: string, field?: string) => ctx.addIssue({ code: "custom", message, ...(field ? { path: [field] } : {}) });
    const a = article(block.type);
    if (block.base64 !== undefined && block.data !== undefined) problem("give the bytes once: base64 (data is its alias)", "data");
    if (block.file_id !== undefined && block.id !== undefined) problem("give the file once: file_id (id is its alias)", "id");
    const bytes = block.base64 ?? block.data;
    const file = block.file_id ?? block.id;
    const sources = [block.url, bytes, file, block.source].filter((value) => value !== undefined).length;
    if (sources !== 1 && block.path === undefined) {
      problem(`${a} block needs exactly one source: url, base64 (or data), file_id (or id), or an Anthropic source object`);
    }
    if (block.source_type !== undefined) {
      const named = { url: ["url", block.url], base64: ["data", bytes], id: ["id", file] } as const;
      const [field, given] = named[block.source_type];
      if (given === undefined) problem(`source_type "${block.source_type}" needs ${field}`, "source_type");
    }
    if (bytes !== undefined && block.mime_type === undefined) problem(`a base64 ${block.type} block needs mime_type`, "mime_type");
    const sourceType = block.source?.type === "base64" ? block.source.media_type : undefined;
    if (sourceType !== undefined && block.mime_type !== undefined && sourceType !== block.mime_type) {
      problem("differs from source.media_type; give the MIME type once", "mime_type");
    }
    const mime = block.mime_type ?? sourceType;
    if (block.type === "image" && mime !== undefined && !mime.startsWith("image/")) {
      problem("an image block's mime_type must be image/*", block.mime_type !== undefined ? "mime_type" : "source");
    }
    const named = block.metadata?.filename;
    if (named !== undefined && (typeof named !== "string" || named.length === 0 || named.length > 255)) {
      problem("metadata.filename must be a file name of 1 to 255 characters", "metadata");
    } else if (named !== undefined && block.filename !== undefined && named !== block.filename) {
      problem("differs from metadata.filename; give the file name once", "filename");
    }
  })
  .transform((block): MediaBlock => {
    const source = block.source;
    const { filename: named, ...metadata } = block.metadata ?? {};
    const out: MediaBlock = { type: block.type };
    const url = block.url ?? (source?.type === "url" ? source.url : undefined);
    const bytes = block.base64 ?? block.data ?? (source?.type === "base64" ? source.data : undefined);
    const file = block.file_id ?? block.id ?? (source?.type === "file" ? source.file_id : undefined);
    if (url !== undefined) out.url = url;
    if (bytes !== undefined) out.base64 = bytes;
    if (file !== undefined) out.file_id = file;
    const mime = block.mime_type ?? (source?.type === "base64" ? source.media_type : undefined);
    if (mime !== undefined) out.mime_type = mime;
    const filename = block.filename ?? (named as string | undefined);
    if (filename !== undefined) out.filename = filename;
    if (Object.keys(metadata).length > 0) out.metadata = metadata;
    return out;
  });

export const contentBlockSchema = z
  .discriminatedUnion("type", [z.strictObject({ type: z.literal("text"), text: z.string() }), mediaBlockSchema], {
    error: `a content block's type must be one of text, ${MEDIA_TYPES.join(", ")}`,
  })
  .describe(
    "Text, or media with exactly one source: url, base64 (or data) with mime_type, file_id (or id), or Anthropic's source object; " +
      "LangChain's source_type forms are accepted. path and relative URLs are refused: the service never reads its own files for a caller.",
  )
  .register(namedSchemas, { id: "ContentBlock" });
export type ContentBlock = z.output<typeof contentBlockSchema>;

export const messageContentSchema = z.union([z.string(), z.array(contentBlockSchema).min(1)]);
