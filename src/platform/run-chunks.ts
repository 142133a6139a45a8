import { AIMessageChunk, isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import type { StreamEvent } from "@langchain/core/tracers/log_stream";
import type { StreamMode as GraphStreamMode } from "@langchain/langgraph";
import { startTogether } from "../admission/start-together.ts";
import type { RunStatus } from "../checkpoints/platform-records.ts";
import type { StreamMode } from "../contract/platform.ts";
import type { RunExecutor } from "../conversations/turns.ts";
import { invokeGraph, messagesOfUpdate } from "../runs/execute.ts";
import type { PreparedRun } from "../runs/prepare.ts";
import { tokensOf } from "../runs/usage.ts";
import { messageDict, wireValue } from "./wire-values.ts";

/** One event of a LangGraph Platform stream: its SSE `event:` name and its JSON data. */
export interface PlatformEvent {
  readonly event: string;
  readonly data: unknown;
  /** The event's place in its run (1: metadata), for `Last-Event-ID`; none on an error event. */
  readonly id?: number;
}

/** What a run's graph was asked to stream, and what it answers once it ends. */
export interface RunOutcome {
  /**
   * The run's state when it ended, as wire JSON: set once the graph has ended, for a run that asked
   * for nothing but its end (runs/wait) or that streams `values`; undefined for other streams.
   */
  values: Record<string, unknown> | undefined;
  /** Interrupts the run ended on, as wire JSON. */
  interrupts: unknown[];
  /**
   * The final status this execution wrote to the run's record; unset until then, and when that
   * write failed or the run's end was not this execution's to write (handed back, taken over).
   */
  status?: RunStatus;
}

/** What a run's record is told around its execution (PlatformRuns' recorder). */
export interface RunRecording {
  /** The run starts, before its first event. */
  started(): Promise<void>;
  /** Its events have ended: `completed` when the graph ran to its end (or paused), false when it failed or its consumer left. */
  ended(completed: boolean, signal: AbortSignal): Promise<void>;
}

/** The graph's own stream modes behind each of the SDK's. */
const GRAPH_MODE: Readonly<Partial<Record<StreamMode, GraphStreamMode>>> = {
  values: "values",
  updates: "updates",
  "messages-tuple": "messages",
  messages: "messages",
  custom: "custom",
  debug: "debug",
  tasks: "tasks",
  checkpoints: "checkpoints",
  tools: "tools",
};

/** The SDK's modes served from something other than a graph stream mode. */
const OTHER_MODES: ReadonlySet<StreamMode> = new Set(["events"]);

/** The SSE event name of each graph mode's chunks, as the SDK reads them. */
const EVENT_NAME: Readonly<Partial<Record<GraphStreamMode, string>>> = { messages: "messages" };

/** The SDK's modes agenthost serves: every one with a graph mode behind it, and `events`. */
export function servedMode(mode: StreamMode): boolean {
  return GRAPH_MODE[mode] !== undefined || OTHER_MODES.has(mode);
}

/**
 * The run's graph as Platform events, numbered from 1: `metadata` first (the run's id, its thread's
 * and the attempt), then each chunk of the modes asked for, named as the SDK expects (`values`,
 * `updates`, `messages` for messages-tuple, `messages/metadata`, `messages/partial` and
 * `messages/complete` for the older messages mode, with `|<namespace>` for a subgraph's). `updates` is
 * always taken from the graph, so the run's interrupts and the tokens it used are known whether or
 * not they were asked for (the graph's `values` only when asked: a stream of the whole state at
 * every step is the costliest mode, and only runs/wait needs the end state, which it gets from the
 * graph's result); a run streaming `values` that pauses ends with a `values` event holding only
 * `__interrupt__`, as the SDK's hook reads it. Storage keys never reach the wire: a chunk's
 * metadata names the public thread id.
 */
export function platformChunks(modes: readonly StreamMode[], subgraphs: boolean, outcome: RunOutcome, attempt = 1, recording?: RunRecording): RunExecutor<PlatformEvent> {
  const asked = new Set(modes.map((mode) => GRAPH_MODE[mode]).filter((mode): mode is GraphStreamMode => mode !== undefined));
  const graphModes = [...new Set<GraphStreamMode>([...asked, "updates"])];
  const tuples = modes.includes("messages-tuple");
  const events = modes.includes("events");
  const legacy = modes.includes("messages") ? new LegacyMessages() : undefined;
  return {
    // Nothing is held back: a Platform client acts when the stream ends (or on /runs/wait's answer),
    // and both come after the lock is free; each event goes out as the graph makes it.
    mayBeFinal: () => false,
    async *execute(run: PreparedRun, signal: AbortSignal) {
      // The run's record is told here, around the events, not by a generator of its own around them.
      await recording?.started();
      let completed = false;
      try {
        // Numbered from 1, as a recorded run's events are (its record's sequence), so ids mean the same either way.
        let id = 1;
        // The root graph's last values, as wire JSON (streamed only when asked for).
        let endWire: Record<string, unknown> | undefined;
        yield { event: "metadata", data: { run_id: run.runId, thread_id: run.threadId, attempt }, id: id++ };
        if (modes.length === 0) {
          // Only the end is asked for (runs/wait): the graph runs as the own API's invoke runs it, its
          // values alone streamed inside LangGraph, with the interrupts it ended on among them.
          endOfInvoke(outcome, await invokeGraph(run, signal));
          completed = true;
          return;
        }
        await startTogether();
        /** The Platform events of one chunk of the graph's stream. */
        function* fromChunk(chunk: unknown[]): Generator<Omit<PlatformEvent, "id">> {
          const [namespace, mode, payload] = (subgraphs ? chunk : [[], ...chunk]) as [string[], GraphStreamMode, unknown];
          const root = namespace.length === 0;
          // The run's own AI messages, as its root graph's nodes add them, carry the tokens it used.
          if (root && mode === "updates" && run.usage) for (const message of messagesOfUpdate(payload)) run.usage(tokensOf(message));
          if (root && (mode === "values" || mode === "updates")) {
            const interrupts = (payload as { __interrupt__?: unknown } | null)?.__interrupt__;
            if (Array.isArray(interrupts)) {
              if (mode === "updates") outcome.interrupts.push(...(wireValue(interrupts) as unknown[]));
              // An interrupt is reported once, after the graph's own chunks (below).
              if (mode === "values") return;
            }
          }
          const suffix = root ? "" : `|${namespace.join("|")}`;
          if (legacy && mode === "messages") for (const [event, data] of legacy.chunk(payload, run)) yield { event: event + suffix, data };
          if (legacy && mode === "updates") for (const [event, data] of legacy.complete(payload)) yield { event: event + suffix, data };
          if (!asked.has(mode) || (mode === "messages" && !tuples)) return;
          const data = mode === "messages" ? messageTuple(payload, run) : wireValue(payload);
          if (root && mode === "values") endWire = data as Record<string, unknown>;
          yield { event: (EVENT_NAME[mode] ?? mode) + suffix, data };
        }
        const options = { ...run.graphConfig, signal, streamMode: graphModes, subgraphs };
        if (events) {
          // The `events` mode: the graph's callback events (streamEvents, version 2). The root graph's
          // own stream chunks arrive among them, as its on_chain_stream events: they become the other
          // modes' events, as from stream(). Events LangChain marks hidden (the graph's internal
          // __start__ steps) stay off the wire.
          // The first event is the root graph's start: its run id is the root's.
          let rootRun: string | undefined;
          for await (const event of run.agent.graph.streamEvents(run.input, { ...options, version: "v2" })) {
            rootRun ??= event.run_id;
            if (event.event === "on_chain_stream" && event.run_id === rootRun) {
              for (const platformEvent of fromChunk((event.data as { chunk: unknown[] }).chunk)) yield { ...platformEvent, id: id++ };
            } else if (!event.tags?.includes("langsmith:hidden")) {
              yield { event: "events", data: callbackEvent(event, run), id: id++ };
            }
          }
        } else {
          const stream = await run.agent.graph.stream(run.input, options);
          for await (const chunk of stream as AsyncIterable<unknown[]>) for (const platformEvent of fromChunk(chunk)) yield { ...platformEvent, id: id++ };
        }
        // Wire JSON made as the chunk came, while the run held its thread (a run after it may change
        // the messages its state shares).
        outcome.values = endWire;
        if (outcome.interrupts.length && asked.has("values")) yield { event: "values", data: { __interrupt__: outcome.interrupts }, id };
        completed = true;
      } finally {
        await recording?.ended(completed, signal);
      }
    },
  };
}

/**
 * The state a graph's invoke ended with, as `outcome` holds it: its values (wire JSON) and the
 * interrupts it paused on. A run that paused before any values has none but its interrupts, as
 * when streamed.
 */
function endOfInvoke(outcome: RunOutcome, state: unknown): void {
  if (state === null || typeof state !== "object" || Array.isArray(state)) {
    outcome.values = state === undefined ? undefined : (wireValue(state) as Record<string, unknown>);
    return;
  }
  const { __interrupt__: interrupts, ...values } = state as Record<string, unknown>;
  if (Array.isArray(interrupts)) outcome.interrupts.push(...(wireValue(interrupts) as unknown[]));
  outcome.values = interrupts !== undefined && Object.keys(values).length === 0 ? undefined : (wireValue(values) as Record<string, unknown>);
}

/** A run's metadata as a client may see it: agenthost's own keys left out, the storage key shown as the public thread id. */
function publicMetadata(metadata: Record<string, unknown> | undefined, run: PreparedRun): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(metadata ?? {})) {
    if (key.startsWith("agenthost_")) continue;
    meta[key] = value === run.storageKey ? run.threadId : value;
  }
  return meta;
}

/** A messages-tuple chunk: the message (or chunk) as a dict, and its metadata without the storage key. */
function messageTuple(payload: unknown, run: PreparedRun): [unknown, Record<string, unknown>] {
  const [message, metadata] = payload as [unknown, Record<string, unknown> | undefined];
  return [isBaseMessage(message) ? messageDict(message) : wireValue(message), publicMetadata(metadata, run)];
}

/** An `events` event: LangChain's callback event as wire JSON, its metadata without the storage key. */
function callbackEvent(event: StreamEvent, run: PreparedRun): unknown {
  const { metadata, data, ...rest } = event;
  return { ...rest, metadata: publicMetadata(metadata, run), data: wireValue(data) };
}

/**
 * The older `messages` stream mode, from the graph's message chunks and its nodes' updates: for each
 * message, `messages/metadata` once (`{<id>: {metadata}}`), then `messages/partial` with the message
 * as accumulated so far; `messages/complete` with each whole message a node returns.
 */
class LegacyMessages {
  private readonly partial = new Map<string, BaseMessage>();

  *chunk(payload: unknown, run: PreparedRun): Generator<[string, unknown]> {
    const [message, metadata] = messageTuple(payload, run);
    const [raw] = payload as [unknown];
    if (!isBaseMessage(raw)) return;
    const key = raw.id ?? (message as { id?: string | null }).id ?? "";
    const before = this.partial.get(key);
    if (!before) yield ["messages/metadata", { [key]: { metadata } }];
    const now = before instanceof AIMessageChunk && raw instanceof AIMessageChunk ? before.concat(raw) : raw;
    this.partial.set(key, now);
    yield ["messages/partial", [messageDict(now)]];
  }

  *complete(update: unknown): Generator<[string, unknown]> {
    if (typeof update !== "object" || update === null) return;
    for (const [node, value] of Object.entries(update)) {
      if (node.startsWith("__")) continue;
      const messages = (value as { messages?: unknown } | null | undefined)?.messages;
      const list = (Array.isArray(messages) ? messages : [messages]).filter(isBaseMessage);
      if (list.length) yield ["messages/complete", list.map(messageDict)];
    }
  }
}
