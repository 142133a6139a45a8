import { STORAGE_KEY_PATTERN } from "../auth/storage-key.ts";
import type { CheckpointBackend } from "../checkpoints/backend.ts";
import { describeDatabaseFailure } from "../checkpoints/database-errors.ts";
import { summaryOf, type ThreadOwner } from "../checkpoints/thread-index.ts";
import { ownerConfigurable } from "../contract/conversation-owner-key.ts";
import type { Target } from "./args.ts";
import type { Mapping } from "./manifest.ts";
import { asRefusal, MaintenanceRefusal } from "./refusal.ts";
import { openServiceWriter } from "./service-savers.ts";
import { openStandardSource, type StandardSource } from "./standard-savers.ts";
import type { CheckpointStore } from "./store.ts";
import { copyThread, type CopiedThread } from "./thread-copy.ts";
import { checkTables } from "./transaction.ts";
import type { TransferOperation } from "./transfer-args.ts";
import { totalsOf, type ImportReport } from "./transfer-report.ts";

/**
 * `import`: conversations in LangGraph's standard checkpoint format (a SQLite file LangGraph's
 * SqliteSaver wrote, a PostgreSQL schema its PostgresSaver wrote: LangGraph's own server, the
 * Python toolkit, an agenthost export) into the service's database, written through the saver
 * stack a worker builds, so the messages become the message store's rows and key ranges and an
 * owned conversation enters the conversation list.
 *
 * Ownership is never guessed. A thread whose id is a storage key (`lat:v1:`…) keeps it; the
 * manifest (migration's format) gives a raw thread id its owner and so its storage key, and may
 * give a storage key its owner too (an export's --owners file does), which puts the conversation in
 * its owner's list. A raw id without an entry refuses the whole run. So does a destination that
 * already has checkpoints, unless --existing skip leaves such threads out.
 *
 * Every conversation is read and revived before anything is written (the dry run stops there). An
 * apply that fails part-way deletes again, through the same saver, the conversations it wrote.
 */

type ImportOperation = Extract<TransferOperation, { kind: "import" }>;

export interface ImportContext {
  readonly readVariable: (name: string) => string | undefined;
}

/** One source thread and where it goes. */
interface Planned {
  readonly from: string;
  readonly to: string;
  readonly owner: ThreadOwner | undefined;
}

const SHOWN = 5;

function listed(ids: readonly string[]): string {
  const shown = ids.slice(0, SHOWN).map((id) => JSON.stringify(id)).join(", ");
  return ids.length > SHOWN ? `${shown} and ${ids.length - SHOWN} more` : shown;
}

/** Where each source thread goes; refused when a raw id has no owner or two threads would meet. */
function plan(sourceIds: readonly string[], mappings: readonly Mapping[]): Planned[] {
  const problems: string[] = [];
  const bySource = new Map<string, Mapping>();
  const present = new Set(sourceIds);
  mappings.forEach((m, i) => {
    if (bySource.has(m.oldThreadId)) problems.push(`source ${JSON.stringify(m.oldThreadId)} appears more than once in the manifest`);
    bySource.set(m.oldThreadId, m);
    if (!present.has(m.oldThreadId)) problems.push(`source ${JSON.stringify(m.oldThreadId)} of manifest[${i}] has no checkpoints in the source`);
  });
  const planned: Planned[] = [];
  const unmapped: string[] = [];
  for (const id of sourceIds) {
    const m = bySource.get(id);
    if (m) planned.push({ from: id, to: m.newThreadId, owner: { userId: m.userId, agentId: m.agentId, threadId: m.threadId } });
    else if (STORAGE_KEY_PATTERN.test(id)) planned.push({ from: id, to: id, owner: undefined });
    else unmapped.push(id);
  }
  if (unmapped.length) {
    problems.push(`${unmapped.length} raw thread id${unmapped.length > 1 ? "s have" : " has"} no manifest entry (ownership is never guessed): ${listed(unmapped)}`);
  }
  const byDestination = new Map<string, string[]>();
  for (const p of planned) byDestination.set(p.to, [...(byDestination.get(p.to) ?? []), p.from]);
  for (const [to, froms] of byDestination) if (froms.length > 1) problems.push(`${listed(froms)} would all be stored under ${to}`);
  if (problems.length) throw new MaintenanceRefusal(`refused, nothing changed: ${problems.join("; ")}`);
  return planned;
}

/** The destinations that already have checkpoints or pending writes in the service's database, with their counts. */
async function occupied(store: CheckpointStore, destinations: readonly string[]) {
  try {
    return await store.transaction("read", async () => {
      const { present } = await checkTables(store);
      const found = new Map<string, string[]>();
      for (const table of present.filter((t) => t === store.layout.checkpoints || t === "writes" || t === "checkpoint_writes")) {
        for (const [id, n] of await store.countRows(table, destinations)) found.set(id, [...(found.get(id) ?? []), `${table}: ${n}`]);
      }
      return found;
    });
  } catch (error) {
    throw asRefusal(error, "refused, nothing changed: the service's database could not be read");
  }
}

/** Import the source's conversations (dry run unless `apply`). See the module comment. */
export async function importConversations(
  store: CheckpointStore,
  service: Target,
  operation: ImportOperation,
  mappings: readonly Mapping[],
  apply: boolean,
  context: ImportContext,
): Promise<ImportReport> {
  const source = await openStandardSource(operation.from, context.readVariable);
  try {
    const planned = plan(await source.threadIds(), mappings);
    const found = await occupied(store, planned.map((p) => p.to));
    const taken = planned.filter((p) => found.has(p.to));
    if (taken.length && operation.existing === "refuse") {
      const which = taken.map((p) => {
        const what = p.from === p.to ? `thread ${p.to}` : `destination ${p.to} of source ${JSON.stringify(p.from)}`;
        return `${what} already has rows (${found.get(p.to)?.join(", ")})`;
      });
      throw new MaintenanceRefusal(`refused, nothing changed: ${which.join("; ")} (--existing skip imports the others)`);
    }
    const todo = planned.filter((p) => !found.has(p.to));

    // Read every conversation first: nothing is written unless all of them can be.
    const counts = new Map<string, CopiedThread>();
    try {
      for (const p of todo) counts.set(p.from, await copyThread(source.saver, p.from, { to: p.to }));
    } catch (error) {
      throw asRefusal(error, "refused, nothing changed");
    }
    if (apply) await writeAll(source, service, todo, context);

    const threads = todo.map((p) => {
      const { checkpoints, writes, namespaces, messages } = counts.get(p.from) as CopiedThread;
      return {
        from_thread_id: p.from,
        to_thread_id: p.to,
        owner: p.owner ? { user_id: p.owner.userId, agent_id: p.owner.agentId, thread_id: p.owner.threadId } : null,
        checkpoints,
        writes,
        namespaces,
        messages,
      };
    });
    return {
      operation: "import",
      backend: store.backend,
      ...store.describe,
      applied: apply,
      from: source.describe,
      existing: operation.existing,
      totals: totalsOf(threads),
      threads,
      skipped: taken.map((p) => ({ from_thread_id: p.from, to_thread_id: p.to })),
    };
  } finally {
    await source.close();
  }
}

/**
 * Write the planned conversations through the service's saver stack. Each destination is checked
 * again just before it is written; on any failure the conversations this run wrote are deleted.
 */
async function writeAll(source: StandardSource, service: Target, todo: readonly Planned[], context: ImportContext): Promise<void> {
  const backend = await openServiceWriter(service, context.readVariable);
  const written: string[] = [];
  try {
    for (const p of todo) {
      for await (const _ of backend.saver.inner.list({ configurable: { thread_id: p.to } }, { limit: 1 })) {
        throw new MaintenanceRefusal(`destination ${p.to} of source ${JSON.stringify(p.from)} got checkpoints during the import (is the service running?)`);
      }
      written.push(p.to);
      const copied = await copyThread(source.saver, p.from, {
        to: p.to,
        target: backend.saver,
        ...(p.owner ? { configurable: ownerConfigurable(p.owner.userId, p.owner.agentId, p.owner.threadId) } : {}),
        shareMessagesBy: backend.saver.serde,
      });
      if (p.owner) await list(backend, p.to, p.owner, copied);
    }
  } catch (error) {
    for (const id of written) await backend.saver.deleteThread(id).catch(() => undefined);
    const undone = written.length ? `the ${written.length} conversation${written.length > 1 ? "s" : ""} it had written deleted again` : "nothing written";
    // The service's stores report a database's failure as "unavailable"; the reason is its cause's.
    const reason = error instanceof MaintenanceRefusal ? error.message : describeDatabaseFailure(error).reason;
    throw new MaintenanceRefusal(`import failed, ${undone}: ${reason}`);
  } finally {
    await backend.close();
  }
}

/**
 * The conversation's entry in its owner's list, as the service keeps it, with the times of its
 * first and last checkpoints (the message store, writing each checkpoint now, wrote the time of the
 * import) and the summary of its latest messages.
 */
async function list(backend: CheckpointBackend, storageKey: string, owner: ThreadOwner, copied: CopiedThread): Promise<void> {
  const summary = summaryOf(copied.latestMessages);
  const createdAt = copied.createdAt ?? Date.now();
  const updatedAt = copied.updatedAt ?? createdAt;
  await backend.threads.deleteThread(storageKey);
  await backend.threads.touch(storageKey, owner, summary, createdAt);
  if (updatedAt !== createdAt) await backend.threads.touch(storageKey, owner, summary, updatedAt);
}
