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
