import { isIPv6 } from "node:net";
import { z } from "zod";

/**
 * The chat page's own settings, read once from the environment. AUTH_SECRET and CHAT_UI_USER_ID stay
 * in this process: the browser never receives them.
 */
export interface ChatUiConfig {
  /** Where agenthost listens. */
  readonly agenthostUrl: string;
  /** Bearer token for agenthost; unset when agenthost runs without authentication. */
  readonly authSecret: string | undefined;
  /** The one identity this page acts for; unset: the service identity (AUTH_SERVICE_USER_ID). */
  readonly userId: string | undefined;
  readonly host: string;
  readonly port: number;
  /**
   * Host names the page answers under besides localhost, 127.0.0.1, [::1] and `host`
   * (CHAT_UI_ALLOWED_HOSTS), each as canonicalHostName gives it; unset: none.
   */
  readonly allowedHosts?: readonly string[];
  /**
   * A cap on attachments per message below agenthost's own (its /info names its
   * MULTIMODAL_MAX_ATTACHMENTS); unset: agenthost's, or DEFAULT_MAX_ATTACHMENTS when it names none.
   */
  readonly maxAttachments?: number;
  /** Bytes all attachments of one message may hold together (CHAT_UI_MAX_UPLOAD_BYTES, default 10 MiB). */
  readonly maxUploadBytes?: number;
}

const unsetIfEmpty = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);

export const DEFAULT_MAX_ATTACHMENTS = 10;
export const DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

/** The longest host name a Host header or CHAT_UI_ALLOWED_HOSTS may name (DNS's 253, and a trailing dot). */
export const MAX_HOST_NAME_LENGTH = 254;

/**
 * A host name in the one form the page compares: lower case, without a trailing dot, an IPv6 address
 * without brackets and in its shortest form ("::1"). Undefined when it is not a name: anything but
 * letters, digits, `-`, `_` and dots (percent-encoding, a port, a scheme, spaces, non-ASCII: browsers
 * send punycode), or an empty label.
 */
export function canonicalHostName(text: string): string | undefined {
  if (text.length === 0 || text.length > MAX_HOST_NAME_LENGTH + 2) return undefined;
  const bracketed = text.startsWith("[") && text.endsWith("]");
  const bare = bracketed ? text.slice(1, -1) : text;
  if (/^[0-9a-f:.]+$/i.test(bare) && bare.includes(":")) {
    // The URL parser writes an address the way browsers send it in Host: [::1], not [0:0:0:0:0:0:0:1].
    return isIPv6(bare) ? new URL(`http://[${bare}]/`).hostname.slice(1, -1) : undefined;
  }
  if (bracketed || text.length > MAX_HOST_NAME_LENGTH) return undefined;
  const name = text.toLowerCase().replace(/\.$/, "");
  return /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(name) ? name : undefined;
}

/** CHAT_UI_ALLOWED_HOSTS: a comma-separated list of host names, each without scheme or port. */
const hostNames = z.string().transform((text, ctx) => {
  const names: string[] = [];
  for (const entry of text.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const name = canonicalHostName(entry);
    if (name === undefined) {
      const message = `has ${JSON.stringify(entry)}, which is not a host name (a name or address without scheme or port, e.g. chat.example.com)`;
      ctx.addIssue({ code: "custom", message });
    } else if (!names.includes(name)) names.push(name);
  }
  return names;
});

/** An integer setting in [min, max]. */
const integer = (min: number, max: number) =>
  z.coerce
    .number({ error: "must be an integer" })
    .int({ error: "must be an integer" })
    .min(min, { error: `must be at least ${min}` })
    .max(max, { error: `must be at most ${max}` });

/** An integer setting with a default. */
const count = (fallback: number, min: number, max: number) => z.preprocess(unsetIfEmpty, integer(min, max).default(fallback));

const shape = {
  AGENTHOST_URL: z.preprocess(
    unsetIfEmpty,
    z.url({ protocol: /^https?$/, error: "must be an http(s) URL such as http://127.0.0.1:8080" }).default("http://127.0.0.1:8080"),
  ),
  AUTH_SECRET: z.preprocess(unsetIfEmpty, z.string().optional()),
  CHAT_UI_USER_ID: z.preprocess(unsetIfEmpty, z.string().optional()),
  CHAT_UI_HOST: z.preprocess(unsetIfEmpty, z.string().default("127.0.0.1")),
  CHAT_UI_PORT: z.preprocess(
    unsetIfEmpty,
    z.coerce
      .number({ error: "must be an integer" })
      .int({ error: "must be an integer" })
      .min(0, { error: "must be at least 0" })
      .max(65535, { error: "must be at most 65535" })
      .default(8501),
  ),
  CHAT_UI_ALLOWED_HOSTS: z.preprocess(unsetIfEmpty, hostNames.default([])),
  MULTIMODAL_MAX_ATTACHMENTS: z.preprocess(unsetIfEmpty, integer(0, 1000).optional()),
  CHAT_UI_MAX_UPLOAD_BYTES: count(DEFAULT_MAX_UPLOAD_BYTES, 0, 100 * 1024 * 1024),
} as const;

export class ChatUiConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`the chat page cannot start; fix the configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ChatUiConfigError";
  }
}

/** Parse the chat page's variables, reporting every bad one at once. */
export function loadChatUiConfig(env: Readonly<Record<string, string | undefined>> = process.env): ChatUiConfig {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(shape)) {
    const result = schema.safeParse(env[key]);
    if (result.success) values[key] = result.data;
    else problems.push(...result.error.issues.map((issue) => `${key} ${issue.message}`));
  }
  if (problems.length > 0) throw new ChatUiConfigError(problems);
  return Object.freeze({
    agenthostUrl: values.AGENTHOST_URL as string,
    authSecret: values.AUTH_SECRET as string | undefined,
    userId: values.CHAT_UI_USER_ID as string | undefined,
    host: values.CHAT_UI_HOST as string,
    port: values.CHAT_UI_PORT as number,
    allowedHosts: Object.freeze(values.CHAT_UI_ALLOWED_HOSTS as string[]),
    maxAttachments: values.MULTIMODAL_MAX_ATTACHMENTS as number | undefined,
    maxUploadBytes: values.CHAT_UI_MAX_UPLOAD_BYTES as number,
  });
}
