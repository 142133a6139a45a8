import type { AgentAccess } from "../../auth/agent-access.ts";
import type { AgentRuns } from "../../conversations/agent-runs.ts";
import type { ConversationService } from "../../conversations/conversation-service.ts";
import type { ConversationHistory } from "../../conversations/history.ts";
import type { ConversationList } from "../../conversations/thread-list.ts";
import type { RunControl } from "../../conversations/run-control.ts";
import type { PlatformRecords } from "../../checkpoints/platform-records.ts";
import type { BackgroundRuns } from "../../background/background-runs.ts";
import type { Assistants } from "../../platform/assistants.ts";
import type { PlatformRuns } from "../../platform/platform-runs.ts";
import type { PlatformThreads } from "../../platform/platform-threads.ts";
import type { Runtime } from "../http-runtime.ts";
import type { HandlersOf } from "../operation.ts";
import type { Operations } from "../operations.ts";

/** What the route handlers call: the conversation services, built once per app from the runtime. */
export interface RouteServices {
  readonly runtime: Runtime;
  /** Who may use which agent (AGENT_ACCESS). */
  readonly access: AgentAccess;
  readonly conversations: ConversationService;
  readonly runs: AgentRuns;
  readonly history: ConversationHistory;
  readonly threads: ConversationList;
  readonly runControl: RunControl;
  /** The LangGraph Platform API over the same conversations. */
  readonly platform: {
    readonly assistants: Assistants;
    readonly threads: PlatformThreads;
    readonly runs: PlatformRuns;
    readonly records: PlatformRecords;
    /** Background runs: accepted into the queue, executed by whichever worker claims them. */
    readonly background: BackgroundRuns;
  };
}

/** A handler for every operation of the route table. */
export type Handlers = HandlersOf<Operations>;
