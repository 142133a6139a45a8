// A real OpenID provider (the `oidc-provider` package) on loopback for the JWT tests: discovery,
// its JWKS, and access tokens in JWT form for the client credentials of its clients (the token's
// `sub` is the client id, its `scope` the scopes granted). Its signing keys are the test's own, so
// a test can also sign tokens it crafts (expired, for another audience, …) with the same key, and
// rotate the keys by restarting the provider on the same port.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWK } from "jose";
import Provider from "oidc-provider";

export const AUDIENCE = "https://agenthost.test/api";

/** A signing key: its private JWK (for the provider and for crafted tokens) and its id. */
export interface SigningKey {
  readonly kid: string;
  readonly privateJwk: JWK;
  readonly privateKey: CryptoKey;
}

export async function signingKey(kid: string, alg: "RS256" | "ES256" = "RS256"): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg, use: "sig" };
  return { kid, privateJwk, privateKey };
}

export interface OidcIssuer {
  readonly issuer: string;
  readonly port: number;
  /** How many times its JWKS was read. */
  readonly jwksReads: number;
  /** An access token (a JWT) for the client `clientId`, with `scope` granted. */
  token(clientId: string, scope?: string): Promise<string>;
  close(): Promise<void>;
}

/** Start the provider with `keys` (the first signs) and one client per id in `clients` (secret: `<id>-secret`), on `port` (0: any). */
export async function startOidcIssuer(keys: readonly SigningKey[], clients: readonly string[], port = 0, scopes = "agents:all agents:deep"): Promise<OidcIssuer> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const bound = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${bound}`;
  const provider = new Provider(issuer, {
    jwks: { keys: keys.map((key) => key.privateJwk) },
    clients: clients.map((id) => ({ client_id: id, client_secret: `${id}-secret`, grant_types: ["client_credentials"], redirect_uris: [], response_types: [] })),
    scopes: scopes.split(" "),
    ttl: { ClientCredentials: 300 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({ scope: scopes, audience: AUDIENCE, accessTokenFormat: "jwt", accessTokenTTL: 300, jwt: { sign: { alg: keys[0]!.privateJwk.alg as "RS256" } } }),
      },
    },
  });
  let jwksReads = 0;
  const callback = provider.callback();
  server.on("request", (req, res) => {
    if (req.url?.startsWith("/jwks")) jwksReads++;
    void callback(req, res);
  });
  return {
    issuer,
    port: bound,
    get jwksReads() {
      return jwksReads;
    },
    async token(clientId, scope) {
      const body = new URLSearchParams({ grant_type: "client_credentials", ...(scope ? { scope } : {}) });
      const ask = () =>
        fetch(`${issuer}/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString("base64")}` },
          body,
        });
      // After a restart on the same port, the first request may go out on a connection the old server closed.
      const response = await ask().catch(ask);
      const answer = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!answer.access_token) throw new Error(`the provider issued no token: ${answer.error ?? response.status} ${answer.error_description ?? ""}`);
      return answer.access_token;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
