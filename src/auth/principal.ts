import { createHash, timingSafeEqual } from "node:crypto";
import type { Config } from "../config/schema.ts";
import { ServiceError } from "../errors/service-error.ts";
import { JwtVerifier, KeysUnavailable, looksLikeJwt, TokenRefused, type JwtSettings, type TokenRefusalReason } from "./jwt-tokens.ts";

/** Who is calling, as derived from the bearer token and AUTH_MODE. Never taken from the body. */
export interface Principal {
  readonly kind: "shared-secret" | "user-token" | "jwt" | "development";
  /** The only user this caller may act as; undefined when it may name any user. */
  readonly boundUserId: string | undefined;
  /** Non-trusted principals must present a signed feedback proof. */
  readonly needsFeedbackProof: boolean;
  /** The roles its token carries (a JWT's AUTH_JWT_ROLES_CLAIM), for AGENT_ACCESS; none for the other kinds. */
  readonly roles?: ReadonlySet<string>;
}

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();

/** Compares SHA-256 digests so the time taken depends on neither the token's length nor content. */
function sameToken(candidate: Buffer, known: Buffer): boolean {
  return timingSafeEqual(candidate, known);
}

/** The principal of an `Authorization` header; a JWT is verified asynchronously, static tokens at once. */
export type Authenticator = (authorizationHeader: string | undefined) => Principal | Promise<Principal>;

/** Where a refused token is reported: a counter by reason and a log line that never holds the token. */
export interface AuthReporting {
  refused(reason: TokenRefusalReason | "missing"): void;
  /** The identity provider's keys could not be read (throttled by the reporter). */
  keysUnreadable(why: string): void;
}

const SILENT: AuthReporting = { refused: () => {}, keysUnreadable: () => {} };

/** The JWT settings of `config`, when JWT bearer tokens are on (AUTH_JWT_ISSUER set). */
export function jwtSettingsOf(config: Config): JwtSettings | undefined {
  if (!config.AUTH_JWT_ISSUER) return undefined;
  const algorithms = [...config.AUTH_JWT_ALGORITHMS];
  if (config.AUTH_JWT_HS256_SECRET && !algorithms.includes("HS256")) algorithms.push("HS256");
  return {
    issuer: config.AUTH_JWT_ISSUER,
    audience: config.AUTH_JWT_AUDIENCE,
    algorithms,
    hs256Secret: config.AUTH_JWT_HS256_SECRET,
    userClaim: config.AUTH_JWT_USER_CLAIM,
    rolesClaim: config.AUTH_JWT_ROLES_CLAIM,
    clockSkewSeconds: config.AUTH_JWT_CLOCK_SKEW,
    jwksUrl: config.AUTH_JWT_JWKS_URL,
    keysMaxAgeMs: config.AUTH_JWT_KEYS_MAX_AGE * 1000,
    keysMinRefreshMs: config.AUTH_JWT_KEYS_MIN_REFRESH * 1000,
  };
}

/** Build the token check once per worker from the validated configuration. */
export function createAuthenticator(config: Config, reporting: AuthReporting = SILENT): Authenticator {
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
  const jwtSettings = jwtSettingsOf(config);
  const jwt = jwtSettings && new JwtVerifier(jwtSettings, (why) => reporting.keysUnreadable(why));
  const openDevelopment = config.ENV_MODE === "development" && !sharedSecret && userTokens.length === 0 && !jwt;
  const developmentPrincipal: Principal = { kind: "development", boundUserId: serviceUser, needsFeedbackProof: false };

  const refuse = (reason: TokenRefusalReason | "missing"): never => {
    reporting.refused(reason);
    // A missing or unknown token is answered as the original service answered it (compat-0.10.md);
    // a JWT refused for a reason says which (RFC 6750).
    if (reason === "missing" || reason === "unknown_token") throw new ServiceError("unauthenticated");
    throw new ServiceError("unauthenticated", { detail: `The bearer token was refused (${reason.replaceAll("_", " ")}).`, challenge: 'Bearer error="invalid_token"' });
  };

  const verified = async (token: string): Promise<Principal> => {
    try {
      const identity = await jwt!.verify(token);
      return { kind: "jwt", boundUserId: identity.userId, needsFeedbackProof: true, roles: identity.roles };
    } catch (error) {
      if (error instanceof TokenRefused) return refuse(error.reason);
      if (error instanceof KeysUnavailable) throw new ServiceError("auth_unavailable", { cause: error });
      throw error;
    }
  };

  return (header) => {
    if (openDevelopment) return developmentPrincipal;
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "");
    if (!match) return refuse("missing");
    const token = match[1]!;
    const presented = digest(token);
    // Compare against every known token, without stopping at the first match.
    let found: Principal | undefined;
    if (sharedSecret && sameToken(presented, sharedSecret)) found = sharedPrincipal;
    for (const entry of userTokens) {
      if (sameToken(presented, entry.digest)) found = entry.principal;
    }
    if (found) return found;
    if (jwt && looksLikeJwt(token)) return verified(token);
    return refuse("unknown_token");
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
