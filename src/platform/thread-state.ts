import type { StateSnapshot } from "@langchain/langgraph";
import { wireValue } from "./wire-values.ts";

/**
 * A graph's state snapshot as the LangGraph Platform API answers it (`ThreadState`): its values as
 * wire JSON, the checkpoint named by the public thread id (never the storage key), the tasks with
 * their interrupts. Checkpoint metadata keeps what LangGraph writes (source, step, parents, the
 * run's metadata) without agenthost's own bookkeeping (`agenthost_*` keys) and with the public
 * thread id where the storage key was.
 */

export interface WireCheckpoint {
  readonly thread_id: string;
  readonly checkpoint_ns: string;
  readonly checkpoint_id: string | null;
  readonly checkpoint_map: Record<string, unknown> | null;
}

export interface WireInterrupt {
  readonly value: unknown;
  readonly id: string | undefined;
}

export interface WireThreadState {
  readonly values: unknown;
  readonly next: string[];
  /** Null for a thread with no checkpoint yet (useStream reads it as "no history"). */
  readonly checkpoint: WireCheckpoint | null;
  readonly metadata: Record<string, unknown> | null;
  readonly created_at: string | null;
  readonly parent_checkpoint: WireCheckpoint | null;
  readonly tasks: Array<Record<string, unknown>>;
  readonly interrupts: WireInterrupt[];
}

function checkpointOf(config: StateSnapshot["config"] | undefined, threadId: string): WireCheckpoint | null {
  const configurable = config?.configurable;
  const id: unknown = configurable?.checkpoint_id;
  if (typeof id !== "string") return null;
  const ns: unknown = configurable?.checkpoint_ns;
  return { thread_id: threadId, checkpoint_ns: typeof ns === "string" ? ns : "", checkpoint_id: id, checkpoint_map: null };
}

function interruptOf(interrupt: { value?: unknown; id?: string }): WireInterrupt {
  return { value: wireValue(interrupt.value), id: interrupt.id };
}

function metadataOf(metadata: StateSnapshot["metadata"], threadId: string, storageKey: string): Record<string, unknown> | null {
  if (!metadata) return null;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(metadata)) {
    if (key.startsWith("agenthost_")) continue;
    out[key] = value === storageKey ? threadId : wireValue(value);
  }
  return out;
}

export function wireState(snapshot: StateSnapshot, threadId: string, storageKey: string): WireThreadState {
  const tasks = snapshot.tasks.map((task) => ({
    id: task.id,
    name: task.name,
    error: task.error === undefined || task.error === null ? null : String((task.error as { message?: unknown }).message ?? task.error),
    interrupts: task.interrupts.map(interruptOf),
    checkpoint: null,
    state: null,
    result: task.result === undefined ? null : wireValue(task.result),
  }));
  return {
    values: wireValue(snapshot.values ?? {}),
    next: [...snapshot.next],
    checkpoint: checkpointOf(snapshot.config, threadId),
    metadata: metadataOf(snapshot.metadata, threadId, storageKey),
    created_at: snapshot.createdAt ?? null,
    parent_checkpoint: checkpointOf(snapshot.parentConfig, threadId),
    tasks,
    interrupts: snapshot.tasks.flatMap((task) => task.interrupts.map(interruptOf)),
  };
}

/** The pending interrupts of a state, by task id, as a Thread carries them. */
export function interruptsByTask(state: WireThreadState): Record<string, WireInterrupt[]> {
  const out: Record<string, WireInterrupt[]> = {};
  for (const task of state.tasks) {
    const interrupts = task.interrupts as WireInterrupt[];
    if (interrupts.length) out[task.id as string] = interrupts;
  }
  return out;
}
