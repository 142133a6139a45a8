import { errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from "jose";
import { JwksCache, KeysUnavailable } from "./jwt-keys.ts";

/**
 * Bearer tokens that are JWTs from the company's identity provider (an OpenID provider such as
 * Auth0, Okta, Entra ID, Keycloak, Cognito or Google), verified with `jose`: the signature against
 * the provider's published keys (RS*, PS*, ES*, EdDSA; HS256 only with AUTH_JWT_HS256_SECRET), then
 * `iss`, `aud`, `exp` and `nbf` with a small clock skew. `alg: none` and any algorithm not allowed are
 * refused before a key is looked at. The user is one claim (`sub` by default); the roles a token
 * carries (for AGENT_ACCESS) come from another (`scope` by default: space-separated, or a list).
 */
export interface JwtSettings {
  readonly issuer: string;
  readonly audience: readonly string[];
  readonly algorithms: readonly string[];
  readonly hs256Secret: string | undefined;
  readonly userClaim: string;
  readonly rolesClaim: string;
  readonly clockSkewSeconds: number;
  readonly jwksUrl: string | undefined;
  readonly keysMaxAgeMs: number;
  readonly keysMinRefreshMs: number;
}

/** Why a token was refused: a bounded set (a metric label and the log line's `reason`). */
export const TOKEN_REFUSALS = [
  "malformed",
  "algorithm_not_allowed",
  "unknown_key",
  "bad_signature",
  "expired",
  "not_yet_valid",
  "wrong_issuer",
  "wrong_audience",
  "no_user_claim",
  "unknown_token",
] as const;
export type TokenRefusalReason = (typeof TOKEN_REFUSALS)[number];

/** A token that does not prove who the caller is. */
export class TokenRefused extends Error {
  constructor(readonly reason: TokenRefusalReason) {
    super(`the token was refused: ${reason}`);
    this.name = "TokenRefused";
  }
}

export { KeysUnavailable };

/** Who a verified token says the caller is. */
export interface TokenIdentity {
  readonly userId: string;
  readonly roles: ReadonlySet<string>;
}

/** Three base64url parts separated by dots: a JWS in compact form (a JWT). */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

/** A claim by name; a dotted name reads nested objects (`realm_access.roles`) when no claim has the whole name. */
function claimOf(payload: JWTPayload, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  let value: unknown = payload;
  for (const part of name.split(".")) {
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** The roles a claim holds: a space-separated string (OAuth's `scope`) or a list of strings. */
function rolesOf(value: unknown): Set<string> {
  if (typeof value === "string") return new Set(value.split(" ").filter(Boolean));
  if (Array.isArray(value)) return new Set(value.filter((role): role is string => typeof role === "string" && role !== ""));
  return new Set();
}

/** jose's refusal, as a reason. */
function reasonOf(error: unknown): TokenRefusalReason | undefined {
  if (error instanceof errors.JWTExpired) return "expired";
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "iss") return "wrong_issuer";
    if (error.claim === "aud") return "wrong_audience";
    if (error.claim === "nbf") return "not_yet_valid";
    return "malformed";
  }
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) return "algorithm_not_allowed";
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) return "unknown_key";
  if (error instanceof errors.JWSSignatureVerificationFailed) return "bad_signature";
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid || error instanceof errors.JOSEError) return "malformed";
  return undefined;
}

export class JwtVerifier {
  private readonly keys: JwksCache | undefined;
  private readonly secret: Uint8Array | undefined;
  private readonly getKey: JWTVerifyGetKey;

  constructor(
    private readonly settings: JwtSettings,
    onKeysReadFailure: (why: string) => void = () => {},
  ) {
    const asymmetric = settings.algorithms.some((algorithm) => algorithm !== "HS256");
    this.keys = asymmetric
      ? new JwksCache(
          { issuer: settings.issuer, jwksUrl: settings.jwksUrl, maxAgeMs: settings.keysMaxAgeMs, minRefreshMs: settings.keysMinRefreshMs, fetchTimeoutMs: 5_000 },
          onKeysReadFailure,
        )
      : undefined;
    this.secret = settings.hs256Secret === undefined ? undefined : new TextEncoder().encode(settings.hs256Secret);
    // jose refuses an algorithm not in `algorithms` before it asks for a key; HS256 is in it only with
    // its secret (jwtSettingsOf), an asymmetric one only with the provider's keys.
    this.getKey = async (header, token) => {
      const key = header.alg === "HS256" ? this.secret : await this.keys?.lookup(header, token);
      if (!key) throw new TokenRefused("algorithm_not_allowed");
      return key;
    };
  }

  /** The caller a token proves, or TokenRefused (KeysUnavailable when the provider's keys cannot be read yet). */
  async verify(token: string): Promise<TokenIdentity> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.getKey, {
        issuer: this.settings.issuer,
        audience: [...this.settings.audience],
        algorithms: [...this.settings.algorithms],
        clockTolerance: this.settings.clockSkewSeconds,
        requiredClaims: ["exp"],
      }));
    } catch (error) {
      if (error instanceof TokenRefused || error instanceof KeysUnavailable) throw error;
      if (error instanceof errors.JWTClaimValidationFailed && error.claim === "exp" && error.reason === "missing") throw new TokenRefused("malformed");
      const reason = reasonOf(error);
      if (reason) throw new TokenRefused(reason);
      throw error;
    }
    const user = claimOf(payload, this.settings.userClaim);
    if (typeof user !== "string" || user === "") throw new TokenRefused("no_user_claim");
    return { userId: user, roles: rolesOf(claimOf(payload, this.settings.rolesClaim)) };
  }
}
