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
    maxAttachments: values.MULTIMODAL_MAX_ATTACHMENTS as number | undefined,
    maxUploadBytes: values.CHAT_UI_MAX_UPLOAD_BYTES as number,
  });
}
