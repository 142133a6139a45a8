import type { ChatMessage, PendingInterrupt } from "./types.ts";

/**
 * The interrupts a message says its run paused on (`custom_data.interrupts`), or an empty list for
 * an ordinary message. Answer them with `resume` (one interrupt by id), or with the conversation's
 * next `invoke`/`stream`, whose input the service reads as the answer.
 */
export function pendingInterrupts(message: ChatMessage): PendingInterrupt[] {
  const listed = message.custom_data?.interrupts;
  if (message.type !== "ai" || !Array.isArray(listed)) return [];
  return listed.filter(
    (item): item is PendingInterrupt => typeof item === "object" && item !== null && typeof (item as { id?: unknown }).id === "string",
  );
}
