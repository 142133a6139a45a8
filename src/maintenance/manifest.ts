import { readFile } from "node:fs/promises";
import { z } from "zod";
import { storageKey } from "../auth/storage-key.ts";
import { MaintenanceRefusal } from "./refusal.ts";

const id = z
  .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
  .min(1, { error: "must not be empty" });

/** One manifest entry. Strict: an unknown field is a typo or a misunderstanding, never ignored. */
const entrySchema = z.strictObject(
  { old_thread_id: id, user_id: id, agent_id: id, thread_id: id.optional() },
  { error: "must be an object {old_thread_id, user_id, agent_id, thread_id?}" },
);

const manifestSchema = z
  .array(entrySchema, { error: "must be a JSON list of mappings" })
  .min(1, { error: "lists no mappings" });

export type ManifestEntry = z.infer<typeof entrySchema>;

/** A manifest entry with its destination computed by the same function the service uses. */
export interface Mapping {
  readonly oldThreadId: string;
  readonly userId: string;
  readonly agentId: string;
  readonly threadId: string;
  readonly newThreadId: string;
}

/** Validate parsed manifest JSON. Every problem is reported, on one line. */
export function parseManifest(data: unknown): Mapping[] {
  const parsed = manifestSchema.safeParse(data);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const where = `manifest${issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("")}`;
      if (issue.code === "unrecognized_keys") {
        return `${where} has unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => JSON.stringify(k)).join(", ")}`;
      }
      return `${where} ${issue.message}`;
    });
    throw new MaintenanceRefusal(`invalid manifest: ${problems.join("; ")}`, 2);
  }
  return parsed.data.map((entry) => {
    const threadId = entry.thread_id ?? entry.old_thread_id;
    return {
      oldThreadId: entry.old_thread_id,
      userId: entry.user_id,
      agentId: entry.agent_id,
      threadId,
      newThreadId: storageKey(entry.user_id, entry.agent_id, threadId),
    };
  });
}

/** Read and validate the manifest file. */
export async function loadManifest(path: string): Promise<Mapping[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "read error";
    throw new MaintenanceRefusal(`cannot read manifest ${JSON.stringify(path)}: ${code}`, 2);
  }
  let data: unknown;
  try {
    data = JSON.parse(text) as unknown;
  } catch (error) {
    throw new MaintenanceRefusal(`manifest ${JSON.stringify(path)} is not valid JSON: ${(error as Error).message}`, 2);
  }
  return parseManifest(data);
}

/**
 * The checks that need no database: each source appears once, each destination once, and no id is
 * both a source and a destination. Returns every problem found (empty when the manifest is sound).
 */
export function manifestConflicts(mappings: readonly Mapping[]): string[] {
  const problems: string[] = [];
  const sources = new Map<string, number[]>();
  const destinations = new Map<string, number[]>();
  mappings.forEach((m, i) => {
    sources.set(m.oldThreadId, [...(sources.get(m.oldThreadId) ?? []), i]);
    destinations.set(m.newThreadId, [...(destinations.get(m.newThreadId) ?? []), i]);
  });
  for (const [source, at] of sources) {
    if (at.length > 1) problems.push(`source ${JSON.stringify(source)} appears more than once (${entries(at)})`);
  }
  for (const [destination, at] of destinations) {
    if (at.length > 1) problems.push(`${entries(at)} map to the same destination ${destination}`);
    const asSource = sources.get(destination);
    if (asSource) {
      problems.push(`${destination} is both a source (${entries(asSource)}) and a destination (${entries(at)})`);
    }
  }
  return problems;
}

function entries(indexes: readonly number[]): string {
  return indexes.map((i) => `manifest[${i}]`).join(", ");
}
