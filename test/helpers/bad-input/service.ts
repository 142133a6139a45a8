import { startService, TEST_TOKEN, type RunningService } from "../service.ts";
import { runCampaign, type CampaignOptions, type Failure, type Figures } from "./campaign.ts";
import { HTTP_LAYER_FAMILIES, FAMILY_WEIGHTS } from "./families.ts";

/** The service a campaign runs against: interrupt agents for resume, a token user, tight limits so 413s and 408s are cheap. */
export const CAMPAIGN_USER_TOKEN = "alice-token-0123456789";
export const CAMPAIGN_MAX_BYTES = 2 * 1024 * 1024;

export function startCampaignService(env: Record<string, string> = {}): Promise<RunningService> {
  return startService({
    AGENT_PATHS: JSON.stringify(["./test/fixtures/interrupt-agents.ts:askName", "./test/fixtures/interrupt-agents.ts:twoQuestions"]),
    AUTH_USERS: JSON.stringify({ alice: CAMPAIGN_USER_TOKEN }),
    FEEDBACK_SIGNING_SECRET: "feedback-signing-secret-0123456789abcdef",
    REQUEST_MAX_BYTES: String(CAMPAIGN_MAX_BYTES),
    CONVERSATION_MAX_MESSAGES: "40",
    // A body that never finishes is answered 408 well inside a campaign's per-request timeout.
    REQUEST_BODY_TIMEOUT: "3",
    LOG_LEVEL: "warn",
    ...env,
  });
}

/** Families of the service's own validation, and those of the HTTP layer (framing, encodings, parser). */
export const SERVICE_WEIGHTS = FAMILY_WEIGHTS.filter(([family]) => !(family in HTTP_LAYER_FAMILIES));
export const HTTP_LAYER_WEIGHTS = FAMILY_WEIGHTS.filter(([family]) => family in HTTP_LAYER_FAMILIES);

export function campaign(service: RunningService, options: Pick<CampaignOptions, "seed" | "requests"> & Partial<CampaignOptions>): Promise<Figures> {
  return runCampaign({
    url: service.url,
    concurrency: 4,
    timeoutMs: 10_000,
    token: TEST_TOKEN,
    userTokens: [CAMPAIGN_USER_TOKEN],
    maxBodyBytes: CAMPAIGN_MAX_BYTES,
    ...options,
  });
}

/** Failures as short lines for an assertion message. */
export function describeFailures(failures: readonly Failure[], limit = 10): string {
  return failures
    .slice(0, limit)
    .map((f) => `#${f.index} ${f.family}/${f.reason}: ${f.method} ${f.target} (${f.mutation}) -> ${f.note.slice(0, 200)}`)
    .join("\n");
}
