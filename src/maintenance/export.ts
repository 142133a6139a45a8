import { existsSync, rmSync, writeFileSync } from "node:fs";
import { MESSAGE_TABLE } from "../checkpoints/message-rows.ts";
import { THREAD_TABLE, type ThreadOwner } from "../checkpoints/thread-index.ts";
import type { Target } from "./args.ts";
import type { ManifestEntry } from "./manifest.ts";
import { asRefusal, MaintenanceRefusal } from "./refusal.ts";
import { openServiceReader } from "./service-savers.ts";
import { checkStandardTargetFree, createStandardTarget, describeLocation, type StandardTarget } from "./standard-savers.ts";
import type { CheckpointStore } from "./store.ts";
import { copyThread } from "./thread-copy.ts";
import { checkTables } from "./transaction.ts";
import type { ExportSelection, TransferOperation } from "./transfer-args.ts";
import { totalsOf, type ExportReport, type OwnerEntry } from "./transfer-report.ts";

/**
 * `export`: the service's conversations in LangGraph's standard checkpoint format, so a team can
 * take them to any LangGraph deployment. Each conversation is read as the service reads it (the
 * message store resolving its key ranges back into the full message lists) and written by the
 * library's own saver into a new SQLite file or a new PostgreSQL schema: the same checkpoints
 * (every namespace), parents, metadata and pending writes, under the same thread ids (storage keys,
 * so the owner mapping survives). The service's own tables are not carried; their owners are, in
 * the report and, with --owners, in a file in the --manifest format that `import` reads back.
 *
 * A dry run reads and revives every selected conversation (so it fails where the export would)
 * and writes nothing. The apply writes a file under a temporary name and gives it its name at the
 * end, or creates the schema and drops it again on failure: the target exists complete or not at all.
 */

type ExportOperation = Extract<TransferOperation, { kind: "export" }>;

export interface ExportContext {
  readonly readVariable: (name: string) => string | undefined;
}

/** The threads to export, with their owners, read in one snapshot of the service's database. */
async function selectThreads(store: CheckpointStore, selection: ExportSelection) {
  let plan: { ids: string[]; owners: Map<string, ThreadOwner>; missingOptional: string[] };
  try {
    plan = await store.transaction("read", async () => {
      const { present, missingOptional } = await checkTables(store);
      const ids = await store.threadIds(store.layout.checkpoints);
      const owners = present.includes(THREAD_TABLE) ? await store.threadOwners() : new Map<string, ThreadOwner>();
      const read = new Set<string>([MESSAGE_TABLE, THREAD_TABLE, "writes", "checkpoint_writes"]);
      return { ids, owners, missingOptional: missingOptional.filter((t) => read.has(t)) };
    });
  } catch (error) {
    throw asRefusal(error, "refused, nothing written: the service's database could not be read");
  }
  const { userId, agentId, threadId } = selection;
  const chosen = plan.ids
    .filter((id) => threadId === undefined || id === threadId)
    .filter((id) => {
      if (userId === undefined && agentId === undefined) return true;
      const owner = plan.owners.get(id);
      return owner !== undefined && (userId === undefined || owner.userId === userId) && (agentId === undefined || owner.agentId === agentId);
    })
    .sort();
  if (threadId !== undefined && !plan.ids.includes(threadId)) {
    throw new MaintenanceRefusal(`refused, nothing written: thread ${JSON.stringify(threadId)} has no checkpoints`);
  }
  if (!chosen.length && (userId !== undefined || agentId !== undefined)) {
    throw new MaintenanceRefusal("refused, nothing written: no conversation in the conversation list matches --thread, --user and --agent");
  }
  return { threads: chosen.map((id) => ({ threadId: id, owner: plan.owners.get(id) })), missingOptional: plan.missingOptional };
}

function ownerEntry(owner: ThreadOwner | undefined): OwnerEntry | null {
  return owner ? { user_id: owner.userId, agent_id: owner.agentId, thread_id: owner.threadId } : null;
}

/** Export the selected conversations (dry run unless `apply`). See the module comment. */
export async function exportConversations(
  store: CheckpointStore,
  service: Target,
  operation: ExportOperation,
  apply: boolean,
  context: ExportContext,
): Promise<ExportReport> {
  const { to, selection, ownersPath } = operation;
  if (ownersPath !== undefined && existsSync(ownersPath)) {
    throw new MaintenanceRefusal(`${JSON.stringify(ownersPath)} already exists; --owners writes a new file`);
  }
  await checkStandardTargetFree(to, context.readVariable);
  const { threads, missingOptional } = await selectThreads(store, selection);

  const reader = await openServiceReader(service, context.readVariable);
  let out: StandardTarget | undefined;
  let ownersWritten = false;
  try {
    if (apply) out = await createStandardTarget(to, context.readVariable);
    const exported: ExportReport["threads"] = [];
    for (const { threadId, owner } of threads) {
      const copy = () => copyThread(reader.saver, threadId, { to: threadId, ...(out ? { target: out.saver } : {}) });
      const { checkpoints, writes, namespaces, messages } = out ? await out.unit(copy) : await copy();
      exported.push({ thread_id: threadId, owner: ownerEntry(owner), checkpoints, writes, namespaces, messages });
    }
    if (out && ownersPath !== undefined) {
      const manifest: ManifestEntry[] = exported.flatMap(({ thread_id, owner }) =>
        owner ? [{ old_thread_id: thread_id, user_id: owner.user_id, agent_id: owner.agent_id, thread_id: owner.thread_id }] : [],
      );
      writeFileSync(ownersPath, `${JSON.stringify(manifest, null, 2)}\n`, { flag: "wx" });
      ownersWritten = true;
    }
    await out?.commit();
    return {
      operation: "export",
      backend: store.backend,
      ...store.describe,
      applied: apply,
      to: describeLocation(to),
      ...(ownersPath !== undefined ? { owners_file: ownersPath } : {}),
      missing_tables: missingOptional,
      totals: totalsOf(exported),
      threads: exported,
    };
  } catch (error) {
    await out?.abandon();
    if (ownersWritten && ownersPath !== undefined) rmSync(ownersPath, { force: true });
    throw asRefusal(error, apply ? "export failed and was removed, nothing written" : "dry run failed, nothing written");
  } finally {
    await reader.close();
  }
}
