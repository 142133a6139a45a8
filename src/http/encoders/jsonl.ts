import type { StreamEvent } from "../../contract/messages.ts";

/** JSON Lines framing: one compact JSON object per line, no completion marker. */
export const encodeJsonlEvent = (event: StreamEvent): string => `${JSON.stringify(event)}\n`;
