import { isIP } from "node:net";
import { z } from "zod";

/**
 * Every environment variable agenthost reads, with its default. Keys are the variable names, so the
 * table of docs/configuration.md, the code and an operator's shell all use one spelling.
 * Empty strings count as unset.
 */

const unsetIfEmpty = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);

const bool = (fallback: boolean) =>
  z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .transform((v) => v.trim().toLowerCase())
      .pipe(z.enum(["true", "false", "1", "0"], { error: "must be true, false, 1 or 0" }))
      .transform((v) => v === "true" || v === "1")
      .default(fallback),
  );

const integer = (min: number, max: number) =>
  z.coerce
    .number({ error: "must be an integer" })
    .int({ error: "must be an integer" })
    .min(min, { error: `must be at least ${min}` })
    .max(max, { error: `must be at most ${max}` });
const int = (fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.preprocess(unsetIfEmpty, integer(min, max).default(fallback));
const optionalInt = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.preprocess(unsetIfEmpty, integer(min, max).optional());

const secondsValue = (min: number) =>
  z.coerce.number({ error: "must be a number of seconds" }).min(min, { error: `must be at least ${min}` });
const seconds = (fallback: number, min = 0) => z.preprocess(unsetIfEmpty, secondsValue(min).default(fallback));
const optionalSeconds = (min = 0) => z.preprocess(unsetIfEmpty, secondsValue(min).optional());

const text = () => z.preprocess(unsetIfEmpty, z.string().optional());

/**
 * A JSON document in a variable: malformed JSON and the wrong shape are both reported by name.
 * `format` says, for malformed JSON, what to write instead (given what was written).
 */
const json = <T extends z.ZodType>(shape: T, fallback: z.input<T>, format?: (raw: string) => string) =>
  z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .transform((raw, ctx) => {
        try {
          return JSON.parse(raw) as unknown;
        } catch {
          ctx.addIssue({ code: "custom", message: format ? `is not valid JSON: ${format(raw)}` : "is not valid JSON" });
          return z.NEVER;
        }
      })
      .pipe(shape)
      .default(fallback as never),
  );

/**
 * The OTLP protocols agenthost exports traces with, each through OpenTelemetry's own exporter: the
 * specification's three. Unset, the traces protocol falls back to the general one, then to the
 * specification's default, http/protobuf (src/observability/load-tracing.ts).
 */
export const OTLP_PROTOCOLS = ["http/protobuf", "http/json", "grpc"] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];
const otlpProtocol = () =>
  z.preprocess(
    (v) => (typeof v === "string" ? unsetIfEmpty(v.trim()) : v),
    z.enum(OTLP_PROTOCOLS, { error: (issue) => `must be http/protobuf, http/json or grpc, not ${JSON.stringify(issue.input)}` }).optional(),
  );

/**
 * What AGENT_PATHS must look like, with the value written as it should be when it looks like entries
 * written bare (`./examples/my-agents.ts:echo`, or several separated by commas).
 */
function agentPathsFormat(raw: string): string {
  const entries = raw.split(",").map((entry) => entry.trim()).filter(Boolean);
  const bare = entries.length > 0 && entries.every((entry) => /^[^\s"'[\]{}]+:[A-Za-z_$][\w$]*$/.test(entry));
  const example = bare ? entries : ["./examples/my-agents.ts:echo"];
  return `write a JSON list of "<module or file>:<export>" strings, e.g. AGENT_PATHS='${JSON.stringify(example)}'`;
}

const nonEmpty = z.string().min(1, { error: "must not be empty" });

/** A comma-separated list of non-empty entries (empty: none). */
const commaList = () =>
  z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .transform((v) => v.split(",").map((entry) => entry.trim()).filter(Boolean))
      .default([]),
  );

/** The JWS algorithms a JWT may be signed with (never `none`); HS256 only with AUTH_JWT_HS256_SECRET. */
export const JWT_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "HS256"] as const;

/**
 * One entry of WEBHOOK_ALLOWED_HOSTS: a host name (matched exactly), an IP address, or a CIDR block
 * (`10.0.0.0/8`, `fd00::/8`); IPv6 may be written in brackets.
 */
function isAllowedHostEntry(entry: string): boolean {
  const [address, prefix, extra] = entry.replace(/^\[(.*)\]$/, "$1").split("/");
  if (extra !== undefined || !address) return false;
  const version = isIP(address);
  if (prefix !== undefined) return version !== 0 && /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
  return version !== 0 || /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/.test(address);
}

/**
 * The demo agents agenthost carries (src/agents/builtin), in the order it serves them. BUILTIN_AGENTS
 * chooses which of them are served; `none` serves none.
 */
export const BUILTIN_AGENT_NAMES = ["chatbot-agent", "create-agent", "deep-agent"] as const;
export type BuiltinAgentName = (typeof BUILTIN_AGENT_NAMES)[number];

/** BUILTIN_AGENTS: a comma list of built-in agent names, or `none`; the result in BUILTIN_AGENT_NAMES's order, once each. */
const builtinAgentList = () =>
  z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .transform((raw, ctx) => {
        const names = raw.split(",").map((name) => name.trim()).filter(Boolean);
        const valid = `${BUILTIN_AGENT_NAMES.join(", ")}, or none`;
        const none = names.filter((name) => name.toLowerCase() === "none").length;
        if (none && none === names.length) return [];
        if (none) {
          ctx.addIssue({ code: "custom", message: `mixes none with agent names: write none alone, or a comma list of ${BUILTIN_AGENT_NAMES.join(", ")}` });
          return z.NEVER;
        }
        const unknown = names.filter((name) => !(BUILTIN_AGENT_NAMES as readonly string[]).includes(name));
        if (unknown.length || !names.length) {
          const what = unknown.length ? `names ${unknown.map((name) => JSON.stringify(name)).join(", ")}, which ${unknown.length > 1 ? "are not built-in agents" : "is not a built-in agent"}` : "lists no agent";
          ctx.addIssue({ code: "custom", message: `${what}: write a comma list of ${valid}` });
          return z.NEVER;
        }
        return BUILTIN_AGENT_NAMES.filter((name) => names.includes(name));
      })
      .default([...BUILTIN_AGENT_NAMES]),
  );

export const modelConfigSchema = z.strictObject({
  provider: z.enum(["openai", "anthropic", "google", "fake"]),
  model: nonEmpty,
  api_key: nonEmpty.optional(),
  api_key_env: nonEmpty.optional(),
  base_url: z.url().optional(),
  temperature: z.number().min(0).max(2).optional(),
  max_tokens: z.number().int().positive().optional(),
  timeout: z.number().positive().optional(),
  max_retries: z.number().int().min(0).optional(),
});
export type ModelConfig = z.infer<typeof modelConfigSchema>;

export const mcpServerSchema = z.union([
  z.strictObject({
    transport: z.enum(["http", "streamable_http"]).default("http"),
    url: z.url(),
    headers: z.record(z.string(), z.string()).default({}),
  }),
  z.strictObject({
    transport: z.literal("stdio"),
    command: nonEmpty,
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
  }),
]);
export type McpServerConfig = z.infer<typeof mcpServerSchema>;

/**
 * One user's entry in FAIR_SHARE_OVERRIDES: each limit it names replaces the default for that user, a
 * number its value and null none at all (unlimited); a limit it leaves out keeps the default.
 */
const fairShareOverride = z.strictObject({
  max_runs: z.number().int().min(1).max(100_000).nullable().optional(),
  requests_per_minute: z.number().int().min(1).max(1_000_000).nullable().optional(),
  daily_tokens: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).nullable().optional(),
});

export const configShape = {
  // Process and HTTP
  PORT: int(8080, 0, 65535),
  HOST: z.preprocess(unsetIfEmpty, z.string().default("0.0.0.0")),
  // Unset: one worker with MEMORY_BACKEND=memory, else the CPUs available (resolved by loadConfig).
  WEB_CONCURRENCY: optionalInt(1, 256),
  ENV_MODE: z.preprocess(unsetIfEmpty, z.enum(["production", "development"]).default("production")),
  LOG_LEVEL: z.preprocess(
    unsetIfEmpty,
    z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  ),
  METRICS_PORT: int(9464, 0, 65535),
  SHUTDOWN_GRACE: optionalSeconds(),
  CORS_ALLOW_ORIGINS: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .transform((v) => v.split(",").map((origin) => origin.trim().replace(/\/+$/, "")).filter(Boolean))
      .pipe(z.array(z.string().regex(/^(\*|https?:\/\/[^/\s?#]+)$/, { error: "lists something that is not an origin (scheme://host[:port]) or *" })))
      .default([]),
  ),
  // Library internals taken over for speed (src/config/library-shortcuts.ts); false: the libraries' own code.
  LIBRARY_SHORTCUTS: bool(true),

  // Cluster supervision (the primary and its workers)
  WORKER_LIVENESS_INTERVAL: seconds(3, 0.1),
  WORKER_LIVENESS_TIMEOUT: seconds(10, 0.1),
  WORKER_STALL_TIMEOUT: seconds(30, 0.1),
  WORKER_RESTART_LIMIT: int(5, 1, 10_000),
  WORKER_RESTART_WINDOW: seconds(60, 1),

  // Agents
  AGENT_PATHS: json(z.array(nonEmpty), [], agentPathsFormat),
  DEFAULT_AGENT: z.preprocess(unsetIfEmpty, z.string().default("chatbot-agent")),
  BUILTIN_AGENTS: builtinAgentList(),
  USE_FAKE_MODEL: bool(false),
  MODEL_CONFIGS: json(z.record(z.string(), modelConfigSchema), {}),
  DEFAULT_MODEL: text(),
  OPENAI_API_KEY: text(),
  OPENAI_BASE_URL: text(),
  ANTHROPIC_API_KEY: text(),
  ANTHROPIC_BASE_URL: text(),
  GOOGLE_API_KEY: text(),
  MCP_SERVERS: json(z.record(z.string(), mcpServerSchema), {}),
  MCP_AGENT_SERVERS: json(z.record(z.string(), z.array(nonEmpty)), {}),
  CHECK_INTERRUPTS: bool(true),
  DEEP_AGENT_INTERRUPT_ON: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .transform((v) => v.split(",").map((name) => name.trim()).filter(Boolean))
      .pipe(z.array(z.enum(["write_file", "edit_file"], { error: "lists tools other than write_file and edit_file" })))
      .default([]),
  ),
  DEFAULT_RECURSION_LIMIT: int(25, 1, 10_000),
  MULTIMODAL_MAX_ATTACHMENTS: int(10, 0, 1000),

  // Checkpoints
  MEMORY_BACKEND: z.preprocess(unsetIfEmpty, z.enum(["memory", "filedb", "serverdb"]).default("memory")),
  FILEDB_DB_PATH: z.preprocess(unsetIfEmpty, z.string().default("data/agenthost.sqlite")),
  FILEDB_BUSY_TIMEOUT: seconds(5, 0.01),
  DATABASE_URL: text(),
  SERVERDB_SCHEMA: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, { error: "must be a plain SQL identifier" })
      .default("public"),
  ),
  SERVERDB_CONNECT_TIMEOUT: seconds(3, 0.1),
  SERVERDB_QUERY_TIMEOUT: seconds(5, 0.1),
  CHECKPOINT_DURABILITY: z.preprocess(unsetIfEmpty, z.enum(["sync", "async"]).default("sync")),
  HISTORY_MAX_PAGE_SIZE: optionalInt(1, 1000),
  MESSAGE_CACHE_SIZE: int(50_000, 0, 10_000_000),
  CONVERSATION_MAX_MESSAGES: int(100_000, 1),
  IDEMPOTENCY_TTL: seconds(86_400, 1),
  // Online retention (src/background/retention-sweep.ts)
  CONVERSATION_TTL: optionalSeconds(1),
  RETENTION_SWEEP_INTERVAL: seconds(60, 0.05),
  RETENTION_MAX_DELETIONS_PER_SECOND: int(50, 1, 100_000),
  CHECKPOINT_KEEP_LATEST: optionalInt(1, 1_000_000),
  RUN_RECORD_TTL: seconds(604_800, 1),

  // Authentication
  AUTH_MODE: z.preprocess(
    unsetIfEmpty,
    z.enum(["trusted", "token"], { error: "must be trusted or token" }).default("trusted"),
  ),
  AUTH_SECRET: text(),
  AUTH_USERS: json(z.record(nonEmpty, nonEmpty), {}),
  AUTH_SERVICE_USER_ID: z.preprocess(unsetIfEmpty, z.string().default("service")),
  // JWT bearer tokens from an identity provider (src/auth/jwt-tokens.ts); on when AUTH_JWT_ISSUER is set.
  AUTH_JWT_ISSUER: z.preprocess(unsetIfEmpty, z.url({ protocol: /^https?$/, error: "must be the issuer's URL (http or https)" }).optional()),
  AUTH_JWT_JWKS_URL: z.preprocess(unsetIfEmpty, z.url({ protocol: /^https?$/, error: "must be the JWKS URL (http or https)" }).optional()),
  AUTH_JWT_AUDIENCE: commaList(),
  AUTH_JWT_ALGORITHMS: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .transform((v) => v.split(",").map((entry) => entry.trim()).filter(Boolean))
      .pipe(z.array(z.enum(JWT_ALGORITHMS, { error: `lists an algorithm that is not one of ${JWT_ALGORITHMS.join(", ")}` })).min(1, { error: "must list at least one algorithm" }))
      .default(["RS256", "ES256", "EdDSA"]),
  ),
  AUTH_JWT_HS256_SECRET: z.preprocess(unsetIfEmpty, z.string().min(32, { error: "must be at least 32 characters" }).optional()),
  AUTH_JWT_USER_CLAIM: z.preprocess(unsetIfEmpty, z.string().default("sub")),
  AUTH_JWT_ROLES_CLAIM: z.preprocess(unsetIfEmpty, z.string().default("scope")),
  AUTH_JWT_CLOCK_SKEW: seconds(30, 0),
  AUTH_JWT_KEYS_MAX_AGE: seconds(600, 1),
  AUTH_JWT_KEYS_MIN_REFRESH: seconds(30, 0),
  // Who may use which agent (src/auth/agent-access.ts): {"<agent>": {"users": [...], "roles": [...]}}.
  AGENT_ACCESS: json(z.record(nonEmpty, z.strictObject({ users: z.array(nonEmpty).default([]), roles: z.array(nonEmpty).default([]) })), {}),
  FEEDBACK_SIGNING_SECRET: text(),

  // Observability
  OBSERVABILITY_BACKEND: z.preprocess(unsetIfEmpty, z.enum(["empty", "langfuse", "langsmith"]).default("empty")),
  LANGFUSE_PUBLIC_KEY: text(),
  LANGFUSE_SECRET_KEY: text(),
  LANGFUSE_BASE_URL: text(),
  LANGSMITH_API_KEY: text(),
  LANGSMITH_ENDPOINT: text(),
  LANGSMITH_PROJECT: text(),
  OTEL_SDK_DISABLED: bool(false),
  OTEL_EXPORTER_OTLP_ENDPOINT: text(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: text(),
  OTEL_EXPORTER_OTLP_HEADERS: text(),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol(),
  OTEL_SERVICE_NAME: z.preprocess(unsetIfEmpty, z.string().default("agenthost")),

  // Limits and queues
  REQUEST_MAX_CONCURRENT: int(8, 1, 100_000),
  REQUEST_QUEUE_MAX_WAITERS: int(0, 0, 100_000),
  REQUEST_QUEUE_TIMEOUT: seconds(1),
  REQUEST_TIMEOUT: seconds(300, 0.001),
  REQUEST_BODY_TIMEOUT: seconds(30, 0.001),
  REQUEST_MAX_BYTES: int(20 * 1024 * 1024, 1024),
  // Long enough to cover a conversation's release after its client leaves a stream (compat-0.10.md: the
  // original waited 60 s), short enough that a truly busy conversation still answers 409 soon.
  THREAD_QUEUE_TIMEOUT: seconds(5),
  THREAD_QUEUE_MAX_WAITERS: int(32, 0, 100_000),
  STREAM_KEEPALIVE_INTERVAL: seconds(15, 0.01),
  STREAM_MAX_UNSENT_BYTES: int(8 * 1024 * 1024, 1024),
  STREAM_RESUME_TTL: seconds(120, 1),
  STREAM_RESUME_MAX_RUN_BYTES: int(8 * 1024 * 1024, 1024),
  STREAM_RESUME_MAX_USER_BYTES: int(32 * 1024 * 1024, 1024),
  STREAM_RESUME_MAX_BYTES: int(128 * 1024 * 1024, 1024),
  REDIS_URL: text(),
  REDIS_KEY_PREFIX: z.preprocess(unsetIfEmpty, z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, { error: "must be 1-64 letters, digits, _ . : -" }).default("agenthost")),
  FEEDBACK_MAX_ATTEMPTS: int(12, 1, 100),
  FEEDBACK_RETRY_DELAY: seconds(2, 0.01),
  REDIS_LOCK_LEASE: seconds(10, 1),

  // Fair share: per-user limits across every worker and host (src/admission/fair-share.ts); each
  // unset is off, and FAIR_SHARE_OVERRIDES sets them per user ({"<user>": {"max_runs": 2, ...}}).
  FAIR_SHARE_MAX_RUNS: optionalInt(1, 100_000),
  FAIR_SHARE_REQUESTS_PER_MINUTE: optionalInt(1, 1_000_000),
  FAIR_SHARE_DAILY_TOKENS: optionalInt(1),
  FAIR_SHARE_OVERRIDES: json(z.record(nonEmpty, fairShareOverride), {}),

  // Background runs (POST /threads/{thread_id}/runs, POST /runs)
  BACKGROUND_RUNS_PER_WORKER: int(4, 0, 10_000),
  BACKGROUND_RUN_TIMEOUT: seconds(3600, 0.001),
  BACKGROUND_RUN_LEASE: seconds(30, 0.5),
  BACKGROUND_RUN_MAX_ATTEMPTS: int(3, 1, 1_000),
  BACKGROUND_POLL_INTERVAL: seconds(1, 0.01),

  // Completion webhooks of background runs (src/background/webhook-*.ts)
  WEBHOOK_SIGNING_SECRET: z.preprocess(unsetIfEmpty, z.string().min(32, { error: "must be at least 32 characters" }).optional()),
  WEBHOOK_ALLOWED_HOSTS: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .transform((v) => v.split(",").map((entry) => entry.trim().toLowerCase()).filter(Boolean))
      .pipe(z.array(z.string().refine(isAllowedHostEntry, { error: "lists something that is not a host name, an IP address or a CIDR block (e.g. 10.0.0.0/8)" })))
      .default([]),
  ),
  WEBHOOK_MAX_ATTEMPTS: int(5, 1, 100),
  WEBHOOK_TIMEOUT: seconds(10, 0.001),
  WEBHOOK_RETRY_DELAY: seconds(1, 0.001),
  WEBHOOK_MAX_BYTES: int(1024 * 1024, 1024, 64 * 1024 * 1024),
  WEBHOOK_MAX_PENDING: int(1000, 1, 1_000_000),

  // Provider HTTP pool (LLM_HTTP_*)
  LLM_HTTP_MAX_CONNECTIONS: int(1000, 1),
  LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS: int(100, 0),
  LLM_HTTP_KEEPALIVE_EXPIRY: seconds(5),
  LLM_HTTP_CONNECT_TIMEOUT: seconds(5, 0.001),
  LLM_HTTP_READ_TIMEOUT: seconds(600, 0.001),
  LLM_HTTP_WRITE_TIMEOUT: seconds(600, 0.001),
  LLM_HTTP_POOL_TIMEOUT: seconds(600, 0.001),
  LLM_HTTP_MAX_RETRIES: int(2, 0, 100),
  LLM_HTTP_MAX_POOLS: int(32, 1, 10_000),
  LLM_HTTP_SHUTDOWN_TIMEOUT: seconds(10),
  LLM_HTTP_ASYNC_TRANSPORT: z.preprocess(
    unsetIfEmpty,
    z
      .literal("httpx", {
        error: "has no meaning in agenthost (the provider pool is undici); leave it unset or set it to httpx",
      })
      .default("httpx"),
  ),
} as const;

type Parsed = { [K in keyof typeof configShape]: z.output<(typeof configShape)[K]> };

/** Settings a backend requires: loadConfig refuses the backend without them, so its type has them. */
type BackendSettings = "MEMORY_BACKEND" | "DATABASE_URL" | "OBSERVABILITY_BACKEND" | "LANGFUSE_PUBLIC_KEY" | "LANGFUSE_SECRET_KEY" | "LANGSMITH_API_KEY";

type CheckpointSettings =
  | { MEMORY_BACKEND: "memory"; DATABASE_URL: string | undefined }
  | { MEMORY_BACKEND: "filedb"; DATABASE_URL: string | undefined }
  | { MEMORY_BACKEND: "serverdb"; DATABASE_URL: string };

type ObservabilitySettings =
  | { OBSERVABILITY_BACKEND: "empty"; LANGFUSE_PUBLIC_KEY: string | undefined; LANGFUSE_SECRET_KEY: string | undefined; LANGSMITH_API_KEY: string | undefined }
  | { OBSERVABILITY_BACKEND: "langfuse"; LANGFUSE_PUBLIC_KEY: string; LANGFUSE_SECRET_KEY: string; LANGSMITH_API_KEY: string | undefined }
  | { OBSERVABILITY_BACKEND: "langsmith"; LANGFUSE_PUBLIC_KEY: string | undefined; LANGFUSE_SECRET_KEY: string | undefined; LANGSMITH_API_KEY: string };

/**
 * The validated configuration. SHUTDOWN_GRACE is resolved (it defaults to REQUEST_TIMEOUT),
 * WEB_CONCURRENCY too (one worker for the memory backend, else the CPUs available), and
 * checking MEMORY_BACKEND or OBSERVABILITY_BACKEND narrows it to the settings that backend requires.
 */
export type Config = Readonly<Omit<Parsed, "SHUTDOWN_GRACE" | "WEB_CONCURRENCY" | BackendSettings> & { SHUTDOWN_GRACE: number; WEB_CONCURRENCY: number } & CheckpointSettings & ObservabilitySettings>;
export type ServerdbConfig = Extract<Config, { MEMORY_BACKEND: "serverdb" }>;
export type LangfuseConfig = Extract<Config, { OBSERVABILITY_BACKEND: "langfuse" }>;
export type LangsmithConfig = Extract<Config, { OBSERVABILITY_BACKEND: "langsmith" }>;
export type ConfigKey = keyof typeof configShape;
