// JWT bearer tokens from a real OpenID provider (`oidc-provider`, in this process, on loopback)
// against the real service: discovery, tokens the provider issues accepted on agenthost's own API and
// on the LangGraph Platform routes (as Authorization and as x-api-key), every kind of bad token
// refused with 401 and a challenge (counted and logged by reason, never with the token), key rotation
// at the provider picked up without a restart, a provider that is down, forged key ids that cannot
// make the service hammer it, HS256 with an explicit secret, and per-agent access (AGENT_ACCESS).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import { base64url, SignJWT, type JWTPayload } from "jose";
import { loadConfig } from "../../src/config/load.ts";
import { AUDIENCE, signingKey, startOidcIssuer, type OidcIssuer, type SigningKey } from "../helpers/oidc-issuer.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";

const CHATBOT = "chatbot-agent";
const DEEP = "deep-agent";

/** The sum of a metric's samples with these labels, from the worker's registry. */
async function sample(service: RunningService, name: string, labels: Record<string, string>): Promise<number> {
  const metrics = await service.runtime.metrics.registry.getMetricsAsJSON();
  const found = metrics.find((metric) => metric.name === name) as { values: Array<{ value: number; labels: Record<string, unknown> }> } | undefined;
  return (found?.values ?? []).filter((value) => Object.entries(labels).every(([key, want]) => value.labels[key] === want)).reduce((sum, value) => sum + value.value, 0);
}

const invoke = (service: RunningService, token: string, agent = CHATBOT) => call(service, "POST", `/${agent}/invoke`, { input: { message: "hello" } }, token);

describe("JWT bearer tokens from an OpenID provider", { concurrency: false }, () => {
  let key: SigningKey;
  let issuer: OidcIssuer;
  let service: RunningService;

  /** A token signed with `signer` (the provider's key unless said), claims over sensible defaults. */
  const crafted = async (claims: JWTPayload, signer: SigningKey = key, header: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ sub: "alice", scope: "agents:all", ...claims })
      .setProtectedHeader({ alg: "RS256", kid: signer.kid, ...header })
      .setIssuer((claims.iss as string | undefined) ?? issuer.issuer)
      .setAudience((claims.aud as string | undefined) ?? AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime((claims.exp as number | undefined) ?? now + 300)
      .sign(signer.privateKey);
  };

  before(async () => {
    key = await signingKey("key-1");
    issuer = await startOidcIssuer([key], ["alice", "bob"]);
    service = await startService({
      AUTH_MODE: "token",
      AUTH_SECRET: undefined,
      AUTH_USERS: JSON.stringify({ carol: "carol-static-token-0123456789" }),
      AUTH_JWT_ISSUER: issuer.issuer,
      AUTH_JWT_AUDIENCE: AUDIENCE,
      AUTH_JWT_KEYS_MIN_REFRESH: "0",
      AGENT_ACCESS: JSON.stringify({ [DEEP]: { roles: ["agents:deep"], users: ["carol"] } }),
    });
  });
  after(async () => {
    await service?.close();
    await issuer?.close();
  });

  test("a token the provider issued is accepted on both APIs, as Authorization and as x-api-key; its sub is the user", async () => {
    const alice = await issuer.token("alice", "agents:all");
    const answer = await invoke(service, alice);
    assert.equal(answer.status, 200);
    const { thread_id } = (await answer.json()) as { thread_id: string };
    const listed = (await (await call(service, "GET", `/${CHATBOT}/threads`, undefined, alice)).json()) as { threads: Array<{ thread_id: string }> };
    assert.ok(listed.threads.some((thread) => thread.thread_id === thread_id), "alice's own conversation list has it");
    // Bob's token is another user: alice's conversation is not his.
    const bob = await issuer.token("bob", "agents:all");
    const bobs = (await (await call(service, "GET", `/${CHATBOT}/threads`, undefined, bob)).json()) as { threads: unknown[] };
    assert.deepEqual(bobs.threads, []);

    // The LangGraph SDK sends the token as x-api-key.
    const client = new Client({ apiUrl: service.url, apiKey: alice });
    const thread = await client.threads.create();
    const values = (await client.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "hi" }] } })) as { messages: unknown[] };
    assert.equal(values.messages.length, 2);
    await assert.rejects(new Client({ apiUrl: service.url, apiKey: bob }).threads.get(thread.thread_id), (error: { status?: number }) => error.status === 404);
    // A static token still works beside JWTs.
    assert.equal((await invoke(service, "carol-static-token-0123456789")).status, 200);
  });

  test("refused tokens: 401 with a challenge, counted by reason, logged without the token", async () => {
    const now = Math.floor(Date.now() / 1000);
    const stranger = await signingKey("stranger");
    const impostor = await signingKey("key-1"); // the provider's key id, another key
    const valid = await crafted({});
    const [head, , signature] = valid.split(".");
    const none = `${base64url.encode(JSON.stringify({ alg: "none", typ: "JWT" }))}.${base64url.encode(JSON.stringify({ sub: "alice", iss: issuer.issuer, aud: AUDIENCE, exp: now + 300 }))}.`;
    const hs256 = await new SignJWT({ sub: "alice" })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer(issuer.issuer)
      .setAudience(AUDIENCE)
      .setExpirationTime(now + 300)
      .sign(new TextEncoder().encode("a secret the service never agreed to use"));
    const cases: Array<[string, string, string]> = [
      ["expired", await crafted({ exp: now - 120 }), "expired"],
      ["not yet valid", await crafted({ nbf: now + 120 }), "not_yet_valid"],
      ["another audience", await crafted({ aud: "https://someone-else.test" }), "wrong_audience"],
      ["another issuer", await crafted({ iss: "https://evil.test" }), "wrong_issuer"],
      ["alg none", none, "algorithm_not_allowed"],
      ["HS256 with no secret configured", hs256, "algorithm_not_allowed"],
      ["a key the provider never published", await crafted({}, stranger), "unknown_key"],
      ["the provider's key id on another key", await crafted({}, impostor), "bad_signature"],
      ["a tampered payload", `${head}.${base64url.encode(JSON.stringify({ sub: "bob", iss: issuer.issuer, aud: AUDIENCE, exp: now + 300 }))}.${signature}`, "bad_signature"],
      ["no user claim", await crafted({ sub: undefined }), "no_user_claim"],
      ["not a token at all", "not-a-jwt", "unknown_token"],
    ];
    for (const [what, token, reason] of cases) {
      const before = await sample(service, "agenthost_auth_refusals_total", { reason });
      const answer = await invoke(service, token);
      assert.equal(answer.status, 401, what);
      assert.equal(((await answer.json()) as { error_code: string }).error_code, "unauthenticated", what);
      assert.match(answer.headers.get("www-authenticate") ?? "", /^Bearer/, what);
      assert.equal(await sample(service, "agenthost_auth_refusals_total", { reason }), before + 1, `${what} is counted as ${reason}`);
      assert.ok(service.logs.some((line) => line.msg === "bearer token refused" && line.reason === reason), `${what} is logged`);
      assert.ok(!JSON.stringify(service.logs).includes(token), `${what}: no log line holds the token`);
    }
    assert.equal((await invoke(service, valid)).status, 200, "the untampered token is fine");
    const missing = await call(service, "POST", `/${CHATBOT}/invoke`, { input: { message: "x" } }, null);
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get("www-authenticate"), "Bearer");
  });

  test("per-agent access: an agent a token's roles do not name is 403 agent_forbidden on every route, and hidden", async () => {
    const plain = await issuer.token("alice", "agents:all");
    const deep = await issuer.token("bob", "agents:all agents:deep");
    const before = await sample(service, "agenthost_auth_refusals_total", { reason: "agent_forbidden" });
    const forbidden = await invoke(service, plain, DEEP);
    assert.equal(forbidden.status, 403);
    assert.equal(((await forbidden.json()) as { error_code: string }).error_code, "agent_forbidden");
    assert.equal((await call(service, "GET", `/${DEEP}/threads`, undefined, plain)).status, 403);
    const client = new Client({ apiUrl: service.url, apiKey: plain });
    await assert.rejects(client.assistants.get(DEEP), (error: { status?: number }) => error.status === 403);
    assert.equal((await call(service, "POST", "/threads", { graph_id: DEEP }, plain)).status, 403);
    const thread = await client.threads.create();
    await assert.rejects(client.runs.wait(thread.thread_id, DEEP, { input: null }), (error: { status?: number }) => error.status === 403);
    await assert.rejects(client.runs.create(thread.thread_id, DEEP, { input: null }), (error: { status?: number }) => error.status === 403);
    assert.ok((await sample(service, "agenthost_auth_refusals_total", { reason: "agent_forbidden" })) >= before + 6);

    const agentsOf = async (token: string) => ((await (await call(service, "GET", "/info", undefined, token)).json()) as { agents: Array<{ key: string }> }).agents.map((agent) => agent.key);
    assert.ok(!(await agentsOf(plain)).includes(DEEP), "hidden from /info");
    assert.ok((await agentsOf(plain)).includes(CHATBOT));
    assert.ok(!(await client.assistants.search({ limit: 100 })).some((assistant) => assistant.graph_id === DEEP), "hidden from assistant search");
    // The role, or being listed by name, opens it.
    assert.ok((await agentsOf(deep)).includes(DEEP));
    assert.equal((await new Client({ apiUrl: service.url, apiKey: deep }).assistants.get(DEEP)).graph_id, DEEP);
    assert.ok((await agentsOf("carol-static-token-0123456789")).includes(DEEP));
  });

  test("keys rotated at the provider are picked up without a restart; a provider that is down leaves known keys verifying", async () => {
    assert.equal((await invoke(service, await issuer.token("alice"))).status, 200);
    const rotated = await signingKey("key-2");
    await issuer.close();
    issuer = await startOidcIssuer([rotated], ["alice", "bob"], issuer.port);
    const fresh = await issuer.token("alice");
    assert.equal((await invoke(service, fresh)).status, 200, "a token signed by the new key");
    await issuer.close();
    // The provider is down: the keys read before still verify; a key never read cannot.
    assert.equal((await invoke(service, fresh)).status, 200);
    assert.equal((await invoke(service, await crafted({}, await signingKey("key-3")))).status, 401);
    issuer = await startOidcIssuer([rotated], ["alice", "bob"], issuer.port);
  });
});

describe("JWT keys read at most every AUTH_JWT_KEYS_MIN_REFRESH; HS256 only with its own secret", { concurrency: false }, () => {
  let key: SigningKey;
  let issuer: OidcIssuer;
  let service: RunningService;
  const SECRET = "a shared HS256 secret of at least 32 characters";

  before(async () => {
    key = await signingKey("only-key");
    issuer = await startOidcIssuer([key], ["alice"]);
    service = await startService({
      AUTH_SECRET: undefined,
      AUTH_MODE: "token",
      AUTH_JWT_ISSUER: issuer.issuer,
      AUTH_JWT_AUDIENCE: `${AUDIENCE},https://second.test`,
      AUTH_JWT_KEYS_MIN_REFRESH: "3600",
      AUTH_JWT_HS256_SECRET: SECRET,
    });
  });
  after(async () => {
    await service?.close();
    await issuer?.close();
  });

  test("forged key ids make the service read the provider's keys at most once per interval", async () => {
    assert.equal((await invoke(service, await issuer.token("alice"))).status, 200);
    const reads = issuer.jwksReads;
    assert.ok(reads >= 1);
    for (let i = 0; i < 20; i++) {
      const forged = await new SignJWT({ sub: "mallory" })
        .setProtectedHeader({ alg: "RS256", kid: `forged-${i}` })
        .setIssuer(issuer.issuer)
        .setAudience(AUDIENCE)
        .setExpirationTime("5m")
        .sign(key.privateKey);
      assert.equal((await invoke(service, forged)).status, 401);
    }
    assert.equal(issuer.jwksReads, reads, "no read for a forged key id within the interval");
  });

  test("an HS256 token signed with AUTH_JWT_HS256_SECRET is accepted, for any configured audience", async () => {
    const token = await new SignJWT({ sub: "hmac-user" })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer(issuer.issuer)
      .setAudience("https://second.test")
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(SECRET));
    assert.equal((await invoke(service, token)).status, 200);
  });
});

test("JWT settings that do not fit together refuse the start, naming what to set", () => {
  const refusal = (env: Record<string, string>) => {
    try {
      loadConfig({ USE_FAKE_MODEL: "true", ...env });
      return "";
    } catch (error) {
      return (error as Error).message;
    }
  };
  assert.match(refusal({ AUTH_JWT_ISSUER: "https://issuer.test" }), /AUTH_JWT_AUDIENCE/);
  assert.match(refusal({ AUTH_JWT_ISSUER: "https://issuer.test", AUTH_JWT_AUDIENCE: "api", AUTH_JWT_ALGORITHMS: "RS256,HS256" }), /HS256, which needs AUTH_JWT_HS256_SECRET/);
  assert.match(refusal({ AUTH_JWT_ISSUER: "https://issuer.test", AUTH_JWT_AUDIENCE: "api", AUTH_JWT_ALGORITHMS: "none" }), /AUTH_JWT_ALGORITHMS/);
  assert.match(refusal({ AUTH_JWT_JWKS_URL: "https://issuer.test/keys" }), /needs AUTH_JWT_ISSUER/);
  assert.match(refusal({ AUTH_JWT_ISSUER: "not a url", AUTH_JWT_AUDIENCE: "api" }), /AUTH_JWT_ISSUER/);
  assert.equal(refusal({ AUTH_JWT_ISSUER: "https://issuer.test", AUTH_JWT_AUDIENCE: "api", ENV_MODE: "production" }), "", "an issuer is credentials enough for production");
});
