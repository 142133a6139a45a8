import { z } from "zod";
import { namedSchemas } from "../contract/named-schemas.ts";

/** The answers that are about the service rather than a conversation: errors, agents, probes. */

export const errorBodySchema = z
  .object({ detail: z.string(), error_code: z.string().optional() })
  .register(namedSchemas, { id: "Error" });

export const infoResponseSchema = z
  .object({
    agents: z.array(z.object({ key: z.string(), description: z.string() })),
    default_agent: z.string(),
    limits: z
      .object({ max_attachments: z.number().int().describe("MULTIMODAL_MAX_ATTACHMENTS: content blocks besides text one message may carry") })
      .describe("What one request may carry, so a front end can say so before sending."),
  })
  .register(namedSchemas, { id: "Info" });
export type InfoResponse = z.input<typeof infoResponseSchema>;

export const livenessSchema = z
  .object({ status: z.enum(["ok", "stalled"]) })
  .register(namedSchemas, { id: "Liveness" });

export const readinessSchema = z
  .object({
    status: z.enum(["ok", "unavailable"]),
    checks: z.array(z.string()).optional().describe("The failing checks' names, when unavailable."),
  })
  .register(namedSchemas, { id: "Readiness" });
