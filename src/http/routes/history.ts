import { Router, type Request, type Response } from "express";
import { effectiveUserId } from "../../auth/principal.ts";
import { storageKey } from "../../auth/storage-key.ts";
import { appendMessages, clearHistory, readHistoryPage } from "../../checkpoints/history.ts";
import { ApiError } from "../../errors/api-error.ts";
import { toChatMessage, toStoredMessage } from "../../runs/message-mapping.ts";
import type { Runtime } from "../../runtime.ts";
import { principalOf, signalOf } from "../request-scope.ts";
import { addMessagesRequestSchema, clearHistoryRequestSchema, type HistoryPage } from "../schemas.ts";
import { agentOf, lockConversation, parseBody } from "./runs.ts";

/** The default page, and the largest a caller may ask for unless HISTORY_MAX_PAGE_SIZE lowers it. */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

export interface HistoryQuery {
  readonly threadId: string;
  readonly userId: string | undefined;
  readonly limit: number;
  readonly offset: number;
}

function single(query: Request["query"], name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new ApiError("validation_failed", { detail: `${name}: give it once, as a plain value` });
  return value;
}

function integer(query: Request["query"], name: string, fallback: number, min: number, max: number, rule: string): number {
  const raw = single(query, name);
  if (raw === undefined) return fallback;
  const value = /^\d{1,7}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min && value <= max)) throw new ApiError("validation_failed", { detail: `${name}: ${rule}` });
  return value;
}

/** A page size: an integer of at least 1; above the maximum it is capped, as the original service did. */
function pageSize(query: Request["query"], maxPage: number): number {
  const raw = single(query, "limit");
  if (raw === undefined) return Math.min(DEFAULT_PAGE_SIZE, maxPage);
  const value = /^\d{1,7}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= 1)) throw new ApiError("validation_failed", { detail: `limit: must be an integer from 1 to ${maxPage}` });
  return Math.min(value, maxPage);
}

/**
 * `thread_id` is required (a user id alone selects nothing); limit 1..max (default 100; larger asks
 * are capped); offset >= 0; an empty user_id counts as omitted.
 */
export function parseHistoryQuery(query: Request["query"], maxPage: number): HistoryQuery {
  const threadId = single(query, "thread_id");
  if (!threadId) throw new ApiError("validation_failed", { detail: "thread_id: required; a user_id alone does not select a conversation" });
  if (threadId.length > 256) throw new ApiError("validation_failed", { detail: "thread_id: at most 256 characters" });
  const userId = single(query, "user_id") || undefined;
  if (userId !== undefined && userId.length > 256) throw new ApiError("validation_failed", { detail: "user_id: at most 256 characters" });
  return {
    threadId,
    userId,
    limit: pageSize(query, maxPage),
    offset: integer(query, "offset", 0, 0, Number.MAX_SAFE_INTEGER, "must be an integer of at least 0"),
  };
}

/** The user_id exactly as the request sent it, for the original service's echo (null when omitted). */
function userIdAsSent(body: unknown): string | null {
  const value = (body as { user_id?: unknown } | null)?.user_id;
  return typeof value === "string" ? value : null;
}

async function handleRead(runtime: Runtime, req: Request, res: Response): Promise<void> {
  const agent = agentOf(runtime, req, res);
  const maxPage = runtime.config.HISTORY_MAX_PAGE_SIZE ?? MAX_PAGE_SIZE;
  const query = parseHistoryQuery(req.query, maxPage);
  const userId = effectiveUserId(principalOf(res), query.userId, runtime.config.AUTH_SERVICE_USER_ID);
  // Reads take no conversation lock: they see the latest committed checkpoint.
  const page = await readHistoryPage(agent, storageKey(userId, agent.name, query.threadId), query.offset, query.limit);
  const next = query.offset + query.limit;
  const body: HistoryPage = {
    // Stored messages carry no run id and no feedback proof.
    messages: page.messages.map((message) => toChatMessage(message, { threadId: query.threadId, runId: null })),
    total: page.total,
    next_offset: next < page.total ? next : null,
  };
  res.status(200).json(body);
}

async function handleAppend(runtime: Runtime, req: Request, res: Response): Promise<void> {
  const agent = agentOf(runtime, req, res);
  const body = parseBody(addMessagesRequestSchema, req.body);
  const userId = effectiveUserId(principalOf(res), body.user_id, runtime.config.AUTH_SERVICE_USER_ID);
  const key = storageKey(userId, agent.name, body.thread_id);
  const messages = body.messages.map(toStoredMessage);
  const lease = await lockConversation(runtime, key, signalOf(res));
  let total: number;
  try {
    total = await appendMessages(agent, key, messages, runtime.config.CONVERSATION_MAX_MESSAGES);
  } finally {
    // Free the conversation before answering, so the caller's next request never finds it busy.
    await lease.release();
  }
  res.status(201).json({
    status: "success",
    thread_id: body.thread_id,
    user_id: userIdAsSent(req.body),
    message: `Added ${messages.length} messages to chat history.`,
    added: messages.length,
    total,
  });
}

/** The clear request: a JSON body, or the same fields as query parameters. */
function clearRequestOf(req: Request): unknown {
  const body = (req.body ?? {}) as unknown;
  const fromBody = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  if (!fromBody) return body;
  const fromQuery = Object.fromEntries(Object.entries(req.query));
  for (const name of Object.keys(fromQuery)) {
    if (name in fromBody && fromBody[name] !== fromQuery[name]) {
      throw new ApiError("validation_failed", { detail: `${name}: the body and the query disagree` });
    }
  }
  return { ...fromQuery, ...fromBody };
}

async function handleClear(runtime: Runtime, req: Request, res: Response): Promise<void> {
  const agent = agentOf(runtime, req, res);
  const request = clearRequestOf(req);
  const body = parseBody(clearHistoryRequestSchema, request);
  const userId = effectiveUserId(principalOf(res), body.user_id, runtime.config.AUTH_SERVICE_USER_ID);
  const key = storageKey(userId, agent.name, body.thread_id);
  const lease = await lockConversation(runtime, key, signalOf(res));
  try {
    await clearHistory(agent, key);
  } finally {
    await lease.release();
  }
  res.status(200).json({
    status: "success",
    thread_id: body.thread_id,
    user_id: userIdAsSent(request),
    message: "Deleted all checkpoints for this conversation.",
    cleared: true,
  });
}

export function historyRoutes(runtime: Runtime): Router {
  const router = Router();
  router.get("{/:agentId}/history", (req, res) => handleRead(runtime, req, res));
  router.post("{/:agentId}/history/add_messages", (req, res) => handleAppend(runtime, req, res));
  router.delete("{/:agentId}/history/clear", (req, res) => handleClear(runtime, req, res));
  return router;
}
