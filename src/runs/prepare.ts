import { randomUUID } from "node:crypto";
import type { BaseMessage } from "@langchain/core/messages";
import type { Command, LangGraphRunnableConfig } from "@langchain/langgraph";
import type { RegisteredAgent } from "../agents/agent.ts";
import { signFeedbackProof } from "../auth/feedback-proof.ts";
import { ownerConfigurable } from "../contract/conversation-owner-key.ts";
import type { Principal } from "../auth/principal.ts";
import type { Config } from "../config/schema.ts";
import { ServiceError } from "../errors/service-error.ts";
import type { InvokeRequest } from "../contract/requests.ts";
import type { ModelCatalog } from "../models/catalog.ts";
import { REQUEST_MODEL_KEY } from "../contract/request-model-key.ts";
import { humanMessageFrom } from "./message-mapping.ts";
import type { RunUsage } from "./usage.ts";

/** The conversation a run belongs to, as the conversation service resolved it. */
export interface RunConversation {
  readonly agent: RegisteredAgent;
  readonly userId: string;
  /** The public thread id the caller sees. */
  readonly threadId: string;
  /** The checkpoint thread id: always the storage key of (user, agent, thread). */
  readonly storageKey: string;
}

/** Everything a run needs, derived once from the request before the lock is taken. */
export interface PreparedRun extends RunConversation {
  readonly runId: string;
  /** performance.now() when the run was prepared, before its conversation lock (the run duration metric starts here). */
  readonly preparedAt: number;
  /** Set on the final answer for principals that need a proof to send feedback. */
  readonly feedbackToken: string | undefined;
  /**
   * New messages for a run; a Command for a resume. A LangGraph Platform run passes the graph state
   * it was given (null: continue from the checkpoint).
   */
  readonly input: { messages: BaseMessage[] } | Command | Record<string, unknown> | null;
  /** The graph config without the signal, which the caller adds. */
  readonly graphConfig: Omit<LangGraphRunnableConfig, "signal"> & { durability: Config["CHECKPOINT_DURABILITY"] };
  /** CHECK_INTERRUPTS: report a paused graph as an `interrupt` message. */
  readonly checkInterrupts: boolean;
  /** The request set recursion_limit (reaching it is then a refusal, not a failure). */
  readonly callerRecursionLimit: boolean;
  /** The `traceparent` of the request that created the run (a background run's), linked from its span. */
  readonly createdBy?: string | undefined;
  /** A busy conversation refuses the run at once (conversation_busy) instead of queueing it for THREAD_QUEUE_TIMEOUT. */
  readonly refusesBusy?: boolean;
  /** Where the run reports the tokens of each AI message it adds (a user's daily budget counts them); absent: not counted. */
  readonly usage?: RunUsage;
  /**
   * With `usage`: how many messages the conversation held as the run started (read under the lock),
   * so a run answered whole counts the messages after them in its final state.
   */
  readonly messagesBefore?: number;
}

/** The run's id, its feedback proof and the graph config shared by runs and resumes. */
export function runEnvelope(
  config: Config,
  conversation: RunConversation,
  principal: Principal,
  request: { recursion_limit?: number | undefined },
  configurable: Record<string, unknown> = {},
  /** A run that was named before it started (a background run keeps its id on every attempt). */
  runId: string = randomUUID(),
): Omit<PreparedRun, "input"> {
  const { agent, userId, threadId, storageKey: key } = conversation;
  const feedbackToken =
    principal.needsFeedbackProof && config.FEEDBACK_SIGNING_SECRET
      ? signFeedbackProof(config.FEEDBACK_SIGNING_SECRET, userId, agent.name, runId)
      : undefined;
  return {
    agent,
    userId,
    threadId,
    storageKey: key,
    runId,
    preparedAt: performance.now(),
    feedbackToken,
    checkInterrupts: config.CHECK_INTERRUPTS,
    callerRecursionLimit: request.recursion_limit !== undefined,
    graphConfig: {
      runId,
      runName: agent.name,
      recursionLimit: request.recursion_limit ?? config.DEFAULT_RECURSION_LIMIT,
      durability: config.CHECKPOINT_DURABILITY,
      configurable: { ...configurable, thread_id: key, ...ownerConfigurable(userId, agent.name, threadId) },
      // Tracing reads the run's identity from here: user and the public thread id (never the storage key).
      metadata: { agent_id: agent.name, run_id: runId, user_id: userId, thread_id: threadId },
    },
  };
}

function countAttachments(message: InvokeRequest["input"]["message"]): number {
  return typeof message === "string" ? 0 : message.filter((block) => block.type !== "text").length;
}

/** A new turn: the request's message, the model it selects, its agent_config. */
export function prepareRun(
  config: Config,
  conversation: RunConversation,
  principal: Principal,
  body: InvokeRequest,
  models?: ModelCatalog,
): PreparedRun {
  const { agent } = conversation;
  const envelope = runEnvelope(config, conversation, principal, body, body.agent_config);

  const selectsModel = body.model_config_key !== undefined || body.model_name !== undefined || body.model_provider !== undefined;
  if (selectsModel && !agent.supportsModelSelection) {
    throw new ServiceError("validation_failed", {
      detail: `Agent "${agent.name}" does not support runtime model selection; omit model_config_key, model_name and model_provider.`,
    });
  }
  if (body.model_config_key !== undefined && !(body.model_config_key in config.MODEL_CONFIGS)) {
    throw new ServiceError("validation_failed", { detail: `model_config_key "${body.model_config_key}" is not a configured model.` });
  }
  if (countAttachments(body.input.message) > config.MULTIMODAL_MAX_ATTACHMENTS) {
    throw new ServiceError("payload_too_large", {
      detail: `The message has more than ${config.MULTIMODAL_MAX_ATTACHMENTS} attachments (MULTIMODAL_MAX_ATTACHMENTS).`,
    });
  }
  // agent_config may not name REQUEST_MODEL_KEY (contract/requests.ts), so the selected model cannot be overridden.
  const model = selectsModel ? models?.select(body) : undefined;
  if (model) envelope.graphConfig.configurable = { ...envelope.graphConfig.configurable, [REQUEST_MODEL_KEY]: model };

  return { ...envelope, input: { messages: [humanMessageFrom(body.input.message)] } };
}
