import { createHash, timingSafeEqual } from "node:crypto";
import type { Config } from "../config/schema.ts";
import { ServiceError } from "../errors/service-error.ts";

/** Who is calling, as derived from the bearer token and AUTH_MODE. Never taken from the body. */
export interface Principal {
  readonly kind: "shared-secret" | "user-token" | "development";
  /** The only user this caller may act as; undefined when it may name any user. */
  readonly boundUserId: string | undefined;
  /** Non-trusted principals must present a signed feedback proof. */
  readonly needsFeedbackProof: boolean;
}

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();

/** Compares SHA-256 digests so the time taken depends on neither the token's length nor content. */
function sameToken(candidate: Buffer, known: Buffer): boolean {
  return timingSafeEqual(candidate, known);
}

export type Authenticator = (authorizationHeader: string | undefined) => Principal;

/** Build the token check once per worker from the validated configuration. */
export function createAuthenticator(config: Config): Authenticator {
  const serviceUser = config.AUTH_SERVICE_USER_ID;
  const sharedSecret = config.AUTH_SECRET ? digest(config.AUTH_SECRET) : undefined;
  const sharedPrincipal: Principal =
    config.AUTH_MODE === "trusted"
      ? { kind: "shared-secret", boundUserId: undefined, needsFeedbackProof: false }
      : { kind: "shared-secret", boundUserId: serviceUser, needsFeedbackProof: true };
  const userTokens = Object.entries(config.AUTH_USERS).map(([userId, token]) => ({
    digest: digest(token),
    principal: { kind: "user-token", boundUserId: userId, needsFeedbackProof: true } as Principal,
  }));
  const openDevelopment = config.ENV_MODE === "development" && !sharedSecret && userTokens.length === 0;
  const developmentPrincipal: Principal = { kind: "development", boundUserId: serviceUser, needsFeedbackProof: false };

  return (header) => {
    if (openDevelopment) return developmentPrincipal;
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "");
    if (!match) throw new ServiceError("unauthenticated");
    const presented = digest(match[1]!);
    // Compare against every known token, without stopping at the first match.
    let found: Principal | undefined;
    if (sharedSecret && sameToken(presented, sharedSecret)) found = sharedPrincipal;
    for (const entry of userTokens) {
      if (sameToken(presented, entry.digest)) found = entry.principal;
    }
    if (!found) throw new ServiceError("unauthenticated");
    return found;
  };
}

/**
 * The effective user of a request: the token's own identity, or for a trusted caller the
 * requested user_id (AUTH_SERVICE_USER_ID when omitted). A mismatch is refused (forbidden_user).
 */
export function effectiveUserId(principal: Principal, requested: string | undefined, serviceUser: string): string {
  if (principal.boundUserId === undefined) return requested ?? serviceUser;
  if (requested !== undefined && requested !== principal.boundUserId) throw new ServiceError("forbidden_user");
  return principal.boundUserId;
}
