import type { StreamEvent } from "../../contract/messages.ts";

/** Server-Sent Events framing: one `data:` line per event, a blank line after each. */
export const encodeSseEvent = (event: StreamEvent): string => `data: ${JSON.stringify(event)}\n\n`;

/** Written once, only after a run ended cleanly. */
export const SSE_DONE = "data: [DONE]\n\n";

/** A comment frame: keeps idle proxies from closing a silent stream; clients ignore it. */
export const SSE_KEEPALIVE = ": keep-alive\n\n";
