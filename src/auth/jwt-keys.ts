import { createLocalJWKSet, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput, type CryptoKey } from "jose";

/**
 * The identity provider's signing keys (its JWKS), kept per worker so a token is verified without a
 * request to the provider. The keys' address is AUTH_JWT_JWKS_URL, or the `jwks_uri` of the issuer's
 * OpenID discovery document (`<issuer>/.well-known/openid-configuration`).
 *
 * - Kept for `maxAgeMs`, then read again in the background while the kept keys go on verifying; a
 *   provider that is down leaves them in use (and is asked again at most every `minRefreshMs`).
 * - A token signed by a key that is not kept (the provider rotated its keys) makes the keys be read
 *   again at once, at most once every `minRefreshMs` whatever the token says: forged key ids cannot
 *   make the service hammer the provider.
 * - Until keys were read once, a token that needs them waits for the first read; when that fails, the
 *   token cannot be verified (KeysUnavailable).
 */
export interface JwtKeySettings {
  /** The issuer, for discovery; the document must name the same issuer. */
  readonly issuer: string | undefined;
  /** The JWKS address; when set, no discovery. */
  readonly jwksUrl: string | undefined;
  readonly maxAgeMs: number;
  readonly minRefreshMs: number;
  /** Each fetch of the document or the keys gives up after this long. */
  readonly fetchTimeoutMs: number;
}

/** The keys could not be read, and none are kept: the token cannot be verified now. */
export class KeysUnavailable extends Error {
  constructor(readonly why: string) {
    super(`the identity provider's keys could not be read: ${why}`);
    this.name = "KeysUnavailable";
  }
}

/** A key for a token's header, as jose's jwtVerify asks for it. */
export type KeyLookup = (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;

/** Documents larger than this are refused (a JWKS is a few kilobytes). */
const MAX_DOCUMENT_BYTES = 1024 * 1024;

interface Held {
  readonly lookup: ReturnType<typeof createLocalJWKSet>;
  readonly kids: ReadonlySet<string>;
  readonly readAt: number;
}

export class JwksCache {
  private held: Held | undefined;
  private reading: Promise<void> | undefined;
  private lastAttempt = -Infinity;
  private jwksUrl: string | undefined;

  constructor(
    private readonly settings: JwtKeySettings,
    /** Told of each failed read (throttled by the caller if it wants). */
    private readonly onReadFailure: (why: string) => void = () => {},
    private readonly now: () => number = () => performance.now(),
  ) {
    this.jwksUrl = settings.jwksUrl;
  }

  /** The key that verifies a token with this header. Throws jose's no-matching-key error when there is none. */
  readonly lookup: KeyLookup = async (header, token) => {
    let held = this.held;
    if (!held) {
      await this.read(true);
      held = this.held;
      if (!held) throw new KeysUnavailable("no keys were read yet");
    } else if (this.now() - held.readAt > this.settings.maxAgeMs) {
      void this.read(false);
    } else if (header.kid !== undefined && !held.kids.has(header.kid) && this.mayRead()) {
      // A key id the provider did not publish when last read: it may have rotated its keys.
      await this.read(false);
      held = this.held!;
    }
    return held.lookup(header, token);
  };

  /** Read the keys now (at most once at a time); `first` waits even within minRefreshMs. */
  private read(first: boolean): Promise<void> {
    if (this.reading) return this.reading;
    if (!first && !this.mayRead()) return Promise.resolve();
    this.lastAttempt = this.now();
    this.reading = this.fetchKeys()
      .then((jwks) => {
        const kids = new Set(jwks.keys.map((key) => key.kid).filter((kid): kid is string => typeof kid === "string"));
        this.held = { lookup: createLocalJWKSet(jwks), kids, readAt: this.now() };
      })
      .catch((error: unknown) => {
        this.onReadFailure(error instanceof Error ? error.message : "unknown failure");
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }

  private mayRead(): boolean {
    return this.now() - this.lastAttempt >= this.settings.minRefreshMs;
  }

  private async fetchKeys(): Promise<JSONWebKeySet> {
    this.jwksUrl ??= await this.discover();
    const jwks = await this.document(this.jwksUrl);
    if (!Array.isArray((jwks as { keys?: unknown }).keys)) throw new Error("the JWKS has no keys list");
    return jwks as unknown as JSONWebKeySet;
  }

  /** The issuer's `jwks_uri`, from its OpenID discovery document. */
  private async discover(): Promise<string> {
    const issuer = this.settings.issuer;
    if (!issuer) throw new Error("neither AUTH_JWT_JWKS_URL nor AUTH_JWT_ISSUER is set");
    const found = await this.document(`${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`);
    if (found.issuer !== issuer) throw new Error(`the discovery document names another issuer (${String(found.issuer)})`);
    if (typeof found.jwks_uri !== "string") throw new Error("the discovery document has no jwks_uri");
    return found.jwks_uri;
  }

  private async document(url: string): Promise<Record<string, unknown>> {
    const response = await fetch(url, { signal: AbortSignal.timeout(this.settings.fetchTimeoutMs), redirect: "error", headers: { accept: "application/json" } });
    if (!response.ok) throw new Error(`${new URL(url).pathname} answered ${response.status}`);
    const declared = Number(response.headers.get("content-length") ?? 0);
    if (declared > MAX_DOCUMENT_BYTES) throw new Error(`${new URL(url).pathname} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
    const text = await response.text();
    if (text.length > MAX_DOCUMENT_BYTES) throw new Error(`${new URL(url).pathname} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error(`${new URL(url).pathname} is not a JSON object`);
    return parsed as Record<string, unknown>;
  }
}
