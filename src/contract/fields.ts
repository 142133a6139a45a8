import { z } from "zod";

/** A name the caller chooses (thread, user, interrupt, tool call): 1 to 256 characters. */
export const identifier = z.string().min(1).max(256);

/**
 * An optional request field. The original service's clients send every unset field as JSON `null`,
 * so `null` and absence mean the same thing: both parse to `undefined`.
 */
export function optional<T extends z.ZodType>(schema: T) {
  return schema
    .nullish()
    .transform((value): z.output<T> | undefined => value ?? undefined)
    .optional();
}

/** A `user_id` field: as `optional`, and an empty string also counts as omitted. */
export const userIdField = optional(z.union([z.literal(""), identifier]).transform((value) => value || undefined));

