import { validBody } from "./bodies.ts";
import { render, type Draft } from "./draft.ts";
import { HTTP_LAYER_FAMILIES, FAMILY_WEIGHTS, families, type MutationContext } from "./families.ts";
import { judge, type Verdict } from "./judge.ts";
import { methodsByPath, operationsOf, type OpenApiDocument, type Operation } from "./operations.ts";
import { Random } from "./random.ts";
import { exchange, type RawRequest } from "./raw-http.ts";

/**
 * A seeded bad-input campaign against a running service: every operation of its /openapi.json,
 * each request a valid one with one mutation applied (or none: the `valid` family keeps the
 * conversations busy with real turns), sent over raw HTTP with a deadline and judged by `judge`.
 * Afterwards every conversation it touched must still read and run.
 */
export interface CampaignOptions {
  readonly url: string;
  readonly seed: number;
  readonly requests: number;
  readonly concurrency: number;
  readonly timeoutMs: number;
  /** The shared token (trusted). */
  readonly token: string;
  /** AUTH_USERS tokens, alice's first. */
  readonly userTokens?: readonly string[];
  /** The service's REQUEST_MAX_BYTES. */
  readonly maxBodyBytes: number;
  /** Family weights (default FAMILY_WEIGHTS). */
  readonly weights?: ReadonlyArray<readonly [string, number]>;
  readonly threads?: number;
}

export interface Failure {
  readonly index: number;
  readonly family: string;
  readonly owner: string | undefined;
  readonly reason: Exclude<Verdict, { ok: true }>["reason"];
  readonly note: string;
  readonly mutation: string;
  readonly method: string;
  readonly target: string;
}

export interface Figures {
  seed: number;
  sent: number;
  ms: number;
  /** Answers by status; `hung` and `no-response` for requests that got none. */
  byStatus: Record<string, number>;
  /** Error answers by `status error_code`. */
  byCode: Record<string, number>;
  serverErrors: number;
  hung: number;
  noResponse: number;
  byFamily: Record<string, { sent: number; failed: number }>;
  failures: Failure[];
  /** Conversations checked after the campaign, and those that no longer read or run. */
  conversations: { checked: number; broken: string[] };
}

const AGENT_WEIGHTS: Record<string, number> = { "chatbot-agent": 5, "ask-name": 2, "two-questions": 1, "create-agent": 1, "deep-agent": 1 };
const USERS = [undefined, "alice", "bob"];

interface Setup {
  readonly port: number;
  readonly document: OpenApiDocument;
  readonly operations: readonly Operation[];
  readonly allowed: Map<string, Set<string>>;
  readonly agents: ReadonlyArray<readonly [string, number]>;
  readonly threads: string[];
  readonly runIds: string[];
}

async function getJson(url: string, token: string): Promise<unknown> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return res.json();
}

async function prepare(options: CampaignOptions): Promise<Setup> {
  const document = (await getJson(`${options.url}/openapi.json`, options.token)) as OpenApiDocument;
  const info = (await getJson(`${options.url}/info`, options.token)) as { agents: Array<{ key: string }> };
  const operations = operationsOf(document);
  const agents = info.agents.map((a) => [a.key, AGENT_WEIGHTS[a.key] ?? 1] as const);
  const threads = Array.from({ length: options.threads ?? 6 }, (_, i) => `bi-${options.seed}-${i}`);
  const runIds: string[] = [];
  // One real turn per thread first: conversations to mutate against, run ids for feedback.
  for (const thread of threads) {
    const res = await fetch(`${options.url}/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${options.token}`, "content-type": "application/json" },
      body: JSON.stringify({ input: { message: "warm-up" }, thread_id: thread }),
    });
    const answer = (await res.json()) as { run_id?: string };
    if (answer.run_id) runIds.push(answer.run_id);
  }
  return { port: Number(new URL(options.url).port), document, operations, allowed: methodsByPath(operations), agents, threads, runIds };
}

function queryValue(name: string, setup: Setup, random: Random): string {
  switch (name) {
    case "thread_id":
      return random.pick(setup.threads);
    case "user_id":
      return random.pick(["alice", "", "bob"]);
    case "limit":
      return String(random.int(1, 200));
    case "offset":
      return String(random.int(0, 20));
    default:
      return "x";
  }
}

/** A valid request for `operation`, before any mutation. */
function baseline(operation: Operation, setup: Setup, options: CampaignOptions, random: Random): Draft {
  const agent = random.weighted(setup.agents);
  const draft: Draft = {
    method: operation.method,
    path: operation.template.replace("{agent_id}", encodeURIComponent(agent)),
    query: [],
    headers: operation.authenticated ? [["Authorization", `Bearer ${options.token}`]] : [],
    body: undefined,
    hasBody: false,
    splices: new Map(),
    contentLength: true,
  };
  for (const parameter of operation.query) {
    if (parameter.required || random.chance(0.4)) draft.query.push(`${parameter.name}=${encodeURIComponent(queryValue(parameter.name, setup, random))}`);
  }
  if (operation.bodySchemaId && (operation.bodyRequired || draft.query.length === 0 || random.chance(0.3))) {
    draft.body = validBody(operation.bodySchemaId, { document: setup.document, threads: setup.threads, runIds: setup.runIds }, random);
    draft.hasBody = true;
    draft.headers.push(["Content-Type", "application/json"]);
  }
  return draft;
}

/** Remember run ids the service answered with, so feedback bodies can name real runs. */
function collectRunIds(setup: Setup, outcome: Awaited<ReturnType<typeof exchange>>): void {
  if (outcome.kind !== "response" || outcome.response.status !== 200 || setup.runIds.length > 200) return;
  const match = /"run_id":"([0-9a-f-]{36})"/.exec(outcome.response.body.toString("utf8"));
  if (match) setup.runIds.push(match[1]!);
}

/** Every conversation the campaign may have written must still read (200) and run (never 5xx or unreadable). */
async function checkConversations(options: CampaignOptions, setup: Setup): Promise<Figures["conversations"]> {
  const broken: string[] = [];
  let checked = 0;
  for (const [agent] of setup.agents) {
    for (const thread of setup.threads) {
      for (const user of USERS) {
        checked++;
        const userQuery = user ? `&user_id=${user}` : "";
        const headers = { authorization: `Bearer ${options.token}`, "content-type": "application/json" };
        const read = await fetch(`${options.url}/${agent}/history?thread_id=${thread}${userQuery}&limit=1000`, { headers });
        const page = (await read.json()) as { messages?: Array<{ custom_data?: { message_type?: string } }> };
        const standIns = page.messages?.filter((m) => m.custom_data?.message_type === "unreadable").length ?? 0;
        const run = await fetch(`${options.url}/${agent}/invoke`, {
          method: "POST",
          headers,
          body: JSON.stringify({ input: { message: "still there?" }, thread_id: thread, ...(user ? { user_id: user } : {}) }),
        });
        const answer = (await run.json()) as { error_code?: string };
        if (read.status !== 200 || standIns > 0 || run.status >= 500 || answer.error_code === "conversation_unreadable") {
          broken.push(`${agent}/${thread}/${user ?? "service"}: history ${read.status} (${standIns} unreadable), run ${run.status} ${answer.error_code ?? ""}`);
        }
      }
    }
  }
  return { checked, broken };
}

export async function runCampaign(options: CampaignOptions): Promise<Figures> {
  const setup = await prepare(options);
  const root = new Random(options.seed);
  const weights = options.weights ?? FAMILY_WEIGHTS;
  const opWeights = setup.operations.map((op) => [op, op.method === "DELETE" ? 0.3 : 1] as const);
  const figures: Figures = {
    seed: options.seed,
    sent: 0,
    ms: 0,
    byStatus: {},
    byCode: {},
    serverErrors: 0,
    hung: 0,
    noResponse: 0,
    byFamily: {},
    failures: [],
    conversations: { checked: 0, broken: [] },
  };
  const started = performance.now();
  let next = 0;

  /** Request `index`, drawn in order from the seed, so the same seed sends the same requests. */
  const generate = (index: number): { family: string; mutation: string; request: RawRequest } => {
    const random = root.fork();
    const operation = random.weighted(opWeights);
    const family = random.weighted(weights);
    const draft = baseline(operation, setup, options, random);
    const context: MutationContext = {
      operation,
      allowed: setup.allowed.get(operation.template) ?? new Set(),
      token: options.token,
      userTokens: options.userTokens ?? [],
      maxBodyBytes: options.maxBodyBytes,
    };
    const mutate = families[family];
    if (!mutate) throw new Error(`no mutation family "${family}" (request ${index})`);
    const mutation = mutate(draft, context, random);
    return { family, mutation, request: render(draft) };
  };

  const worker = async () => {
    while (next < options.requests) {
      const index = next++;
      const { family, mutation, request } = generate(index);
      const outcome = await exchange(setup.port, request, options.timeoutMs);
      collectRunIds(setup, outcome);
      const verdict = judge(outcome, request.method);
      const status = outcome.kind === "response" ? String(outcome.response.status) : outcome.kind === "hung" ? "hung" : "no-response";
      figures.sent++;
      figures.byStatus[status] = (figures.byStatus[status] ?? 0) + 1;
      if (outcome.kind === "response" && outcome.response.status >= 400) {
        const code = /"error_code":"([a-z_]+)"/.exec(outcome.response.body.toString("utf8"))?.[1] ?? "(none)";
        const key = `${outcome.response.status} ${code}`;
        figures.byCode[key] = (figures.byCode[key] ?? 0) + 1;
      }
      if (outcome.kind === "response" && outcome.response.status >= 500) figures.serverErrors++;
      if (outcome.kind === "hung") figures.hung++;
      if (outcome.kind === "closed") figures.noResponse++;
      const tally = (figures.byFamily[family] ??= { sent: 0, failed: 0 });
      tally.sent++;
      if (!verdict.ok) {
        tally.failed++;
        figures.failures.push({
          index,
          family,
          owner: HTTP_LAYER_FAMILIES[family],
          reason: verdict.reason,
          note: verdict.note,
          mutation: mutation.slice(0, 160),
          method: request.method,
          target: request.target.slice(0, 160),
        });
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  figures.ms = Math.round(performance.now() - started);
  figures.conversations = await checkConversations(options, setup);
  return figures;
}

/** The figures as a few readable lines. */
export function formatFigures(label: string, figures: Figures): string {
  const statuses = Object.entries(figures.byStatus)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, n]) => `${status}: ${n}`)
    .join(", ");
  const lines = [
    `${label} (seed ${figures.seed}): ${figures.sent} requests in ${(figures.ms / 1000).toFixed(1)} s; ` +
      `5xx ${figures.serverErrors}, hung ${figures.hung}, no response ${figures.noResponse}, failures ${figures.failures.length}`,
    `  by status: ${statuses}`,
    `  errors by code: ${Object.entries(figures.byCode)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([code, n]) => `${code}: ${n}`)
      .join(", ")}`,
    `  conversations checked afterwards: ${figures.conversations.checked}, broken: ${figures.conversations.broken.length}`,
  ];
  const groups = new Map<string, Failure[]>();
  for (const failure of figures.failures) {
    const key = `${failure.family}/${failure.reason}${failure.owner ? ` [${failure.owner}]` : ""}`;
    groups.set(key, [...(groups.get(key) ?? []), failure]);
  }
  for (const [key, group] of groups) {
    const first = group[0]!;
    lines.push(`  ${key}: ${group.length}, e.g. #${first.index} ${first.method} ${first.target} (${first.mutation}) -> ${first.note.slice(0, 160)}`);
  }
  for (const broken of figures.conversations.broken.slice(0, 5)) lines.push(`  broken conversation: ${broken}`);
  return lines.join("\n");
}
