import { availableCpus } from "./available-cpus.ts";
import { configShape, type Config, type ConfigKey } from "./schema.ts";

/**
 * The text of a startup refusal: one problem is one line (`agenthost cannot start: <problem>`), like
 * the primary's own refusals; several are `what` and then one indented line each.
 */
export function startupRefusalText(what: string, problems: readonly string[]): string {
  if (problems.length === 1) return `agenthost cannot start: ${problems[0]!}`;
  return `agenthost cannot start; ${what}:\n${problems.map((p) => `  - ${p}`).join("\n")}`;
}

/** Startup refusal: every problem found in the environment, one per line. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(startupRefusalText("fix the configuration", problems));
    this.name = "ConfigError";
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Parse the environment into a frozen Config. Each variable is parsed on its own so one bad value
 * does not hide the others; rules that relate several variables run on whatever parsed.
 * Only src/config/ reads process.env (eslint.config.js enforces it); everything else gets its values from Config.
 */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const key of Object.keys(configShape) as ConfigKey[]) {
    const result = configShape[key].safeParse(env[key]);
    if (result.success) {
      values[key] = result.data;
    } else {
      for (const issue of result.error.issues) {
        const where = issue.path.length ? `${key} ${issue.path.join(".")}` : key;
        problems.push(`${where} ${issue.message}`);
      }
    }
  }
  problems.push(...resolveModelKeys(values as Partial<Config>, env));
  problems.push(...crossFieldProblems(values as Partial<Config>));
  if (problems.length) throw new ConfigError(problems);
  values.SHUTDOWN_GRACE ??= values.REQUEST_TIMEOUT;
  // Each worker keeps its own memory backend: one worker, or conversations split between workers.
  values.WEB_CONCURRENCY ??= values.MEMORY_BACKEND === "memory" ? 1 : availableCpus();
  return Object.freeze(values as Config);
}

/**
 * MODEL_CONFIGS entries may name the variable holding their key (`api_key_env`) instead of carrying
 * it; read it here, with the rest of the environment, so the rest of agenthost sees `api_key` only.
 */
function resolveModelKeys(c: Partial<Config>, env: Env): string[] {
  const problems: string[] = [];
  if (!c.MODEL_CONFIGS) return problems;
  const resolved: Record<string, Config["MODEL_CONFIGS"][string]> = {};
  for (const [key, entry] of Object.entries(c.MODEL_CONFIGS)) {
    if (entry.api_key !== undefined && entry.api_key_env !== undefined) {
      problems.push(`MODEL_CONFIGS.${key} sets both api_key and api_key_env; keep one`);
    }
    let apiKey = entry.api_key;
    if (entry.api_key_env !== undefined && apiKey === undefined) {
      apiKey = env[entry.api_key_env]?.trim() || undefined;
      if (apiKey === undefined) problems.push(`MODEL_CONFIGS.${key}.api_key_env names ${entry.api_key_env}, which is not set`);
    }
    resolved[key] = Object.freeze({ ...entry, ...(apiKey !== undefined ? { api_key: apiKey } : {}) });
  }
  (c as Record<string, unknown>).MODEL_CONFIGS = Object.freeze(resolved);
  return problems;
}

/** JWT settings that do not make sense together. */
function jwtProblems(c: Partial<Config>): string[] {
  const problems: string[] = [];
  const named = ["AUTH_JWT_JWKS_URL", "AUTH_JWT_HS256_SECRET"] as const;
  if (!c.AUTH_JWT_ISSUER) {
    for (const name of named) if (c[name]) problems.push(`${name} needs AUTH_JWT_ISSUER (the issuer every token must name)`);
    return problems;
  }
  if (!c.AUTH_JWT_AUDIENCE?.length) problems.push("AUTH_JWT_ISSUER needs AUTH_JWT_AUDIENCE: the audience (API identifier) tokens must be issued for");
  if (c.AUTH_JWT_ALGORITHMS?.includes("HS256") && !c.AUTH_JWT_HS256_SECRET) problems.push("AUTH_JWT_ALGORITHMS lists HS256, which needs AUTH_JWT_HS256_SECRET");
  const secret = c.AUTH_JWT_HS256_SECRET;
  if (secret && (secret === c.AUTH_SECRET || Object.values(c.AUTH_USERS ?? {}).includes(secret))) {
    problems.push("AUTH_JWT_HS256_SECRET must differ from AUTH_SECRET and every AUTH_USERS token");
  }
  return problems;
}

function crossFieldProblems(c: Partial<Config>): string[] {
  const problems: string[] = [];
  const users = c.AUTH_USERS ?? {};
  const userTokens = Object.values(users);
  const hasCredentials = Boolean(c.AUTH_SECRET) || userTokens.length > 0 || Boolean(c.AUTH_JWT_ISSUER);

  if (c.ENV_MODE === "production" && !hasCredentials) {
    problems.push(
      "ENV_MODE=production requires credentials: set AUTH_SECRET, AUTH_USERS or AUTH_JWT_ISSUER (or ENV_MODE=development for local use)",
    );
  }
  if (c.AUTH_MODE === "token" && !hasCredentials) {
    problems.push("AUTH_MODE=token requires AUTH_USERS, AUTH_SECRET or AUTH_JWT_ISSUER");
  }
  problems.push(...jwtProblems(c));
  if (new Set(userTokens).size !== userTokens.length) {
    problems.push("AUTH_USERS gives the same token to two users; every user needs their own token");
  }
  if (c.AUTH_SECRET && userTokens.includes(c.AUTH_SECRET)) {
    problems.push("AUTH_SECRET must differ from every AUTH_USERS token");
  }
  const serviceUser = c.AUTH_SERVICE_USER_ID;
  if (c.AUTH_SECRET && serviceUser !== undefined && Object.hasOwn(users, serviceUser)) {
    const actsAs = c.AUTH_MODE === "token" ? "every AUTH_SECRET request" : "AUTH_SECRET requests that name no user_id";
    problems.push(
      `AUTH_USERS has a user "${serviceUser}", which is AUTH_SERVICE_USER_ID, the identity of ${actsAs}: ` +
        "they would share conversations; rename that user or set AUTH_SERVICE_USER_ID to another id",
    );
  }
  const signing = c.FEEDBACK_SIGNING_SECRET;
  if (signing !== undefined) {
    if (signing.length < 32) problems.push("FEEDBACK_SIGNING_SECRET must be at least 32 characters");
    if (signing === c.AUTH_SECRET) problems.push("FEEDBACK_SIGNING_SECRET must differ from AUTH_SECRET");
    if (userTokens.includes(signing)) problems.push("FEEDBACK_SIGNING_SECRET must differ from every AUTH_USERS token");
  }
  // A receiver that knows the webhook secret must not hold a key to the service (or forge feedback).
  const webhookSecret = c.WEBHOOK_SIGNING_SECRET;
  if (webhookSecret !== undefined) {
    if (webhookSecret === c.AUTH_SECRET) problems.push("WEBHOOK_SIGNING_SECRET must differ from AUTH_SECRET");
    if (webhookSecret === signing) problems.push("WEBHOOK_SIGNING_SECRET must differ from FEEDBACK_SIGNING_SECRET");
    if (userTokens.includes(webhookSecret)) problems.push("WEBHOOK_SIGNING_SECRET must differ from every AUTH_USERS token");
  }
  if (
    c.LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS !== undefined &&
    c.LLM_HTTP_MAX_CONNECTIONS !== undefined &&
    c.LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS > c.LLM_HTTP_MAX_CONNECTIONS
  ) {
    problems.push(
      `LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS (${c.LLM_HTTP_MAX_KEEPALIVE_CONNECTIONS}) must not exceed LLM_HTTP_MAX_CONNECTIONS (${c.LLM_HTTP_MAX_CONNECTIONS})`,
    );
  }
  if (c.MEMORY_BACKEND === "memory" && c.WEB_CONCURRENCY !== undefined && c.WEB_CONCURRENCY > 1) {
    problems.push(
      `WEB_CONCURRENCY=${c.WEB_CONCURRENCY} with MEMORY_BACKEND=memory would split each conversation between workers (each keeps its own memory): ` +
        "set MEMORY_BACKEND=filedb (SQLite) or serverdb (PostgreSQL) for several workers, or WEB_CONCURRENCY=1",
    );
  }
  if (c.MEMORY_BACKEND === "serverdb" && !c.DATABASE_URL) {
    problems.push("MEMORY_BACKEND=serverdb requires DATABASE_URL");
  }
  for (const [agent, servers] of Object.entries(c.MCP_AGENT_SERVERS ?? {})) {
    for (const name of servers) {
      if (c.MCP_SERVERS && !(name in c.MCP_SERVERS)) {
        problems.push(`MCP_AGENT_SERVERS.${agent} names "${name}", which is not in MCP_SERVERS`);
      }
    }
  }
  if (c.OBSERVABILITY_BACKEND === "langfuse") {
    if (!c.LANGFUSE_PUBLIC_KEY) problems.push("OBSERVABILITY_BACKEND=langfuse requires LANGFUSE_PUBLIC_KEY");
    if (!c.LANGFUSE_SECRET_KEY) problems.push("OBSERVABILITY_BACKEND=langfuse requires LANGFUSE_SECRET_KEY");
  }
  if (c.OBSERVABILITY_BACKEND === "langsmith" && !c.LANGSMITH_API_KEY) {
    problems.push("OBSERVABILITY_BACKEND=langsmith requires LANGSMITH_API_KEY");
  }
  if (c.DEEP_AGENT_INTERRUPT_ON?.length && c.CHECK_INTERRUPTS === false) {
    problems.push("DEEP_AGENT_INTERRUPT_ON needs CHECK_INTERRUPTS=true, or approvals would never reach the caller");
  }
  return problems;
}
