import type { StreamEvent } from "../schemas.ts";

/** JSON Lines framing: one compact JSON object per line, no completion marker. */
export const encodeJsonlEvent = (event: StreamEvent): string => `${JSON.stringify(event)}\n`;
