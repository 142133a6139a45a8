import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { call, startService, type RunningService } from "../helpers/service.ts";

const WHOAMI = JSON.stringify(["./test/fixtures/spine-agents.ts:whoami"]);

async function whoami(service: RunningService, token: string | null, userId?: string) {
  const res = await call(service, "POST", "/whoami/invoke", { input: { message: "who" }, user_id: userId }, token);
  const body = (await res.json()) as { content?: string; detail?: string };
  return { status: res.status, body, user: res.status === 200 ? (JSON.parse(body.content!) as { user_id: string }).user_id : undefined };
}

describe("trusted mode (shared secret)", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({
      AGENT_PATHS: WHOAMI,
      AUTH_USERS: JSON.stringify({ ann: "ann-token", bob: "bob-token" }),
    });
  });
  after(() => service.close());

  test("missing, malformed or wrong tokens get 401 with detail", async () => {
    for (const token of [null, "wrong", ""]) {
      const r = await whoami(service, token);
      assert.equal(r.status, 401);
      assert.equal(typeof r.body.detail, "string");
    }
    const res = await fetch(`${service.url}/info`, { headers: { authorization: "Basic abc" } });
    assert.equal(res.status, 401);
  });

  test("the shared secret may name any user; omitted means the service user", async () => {
    assert.equal((await whoami(service, "test-secret-token")).user, "service");
    assert.equal((await whoami(service, "test-secret-token", "zoe")).user, "zoe");
  });

  test("AUTH_USERS tokens stay bound to their user even in trusted mode", async () => {
    assert.equal((await whoami(service, "ann-token")).user, "ann");
    assert.equal((await whoami(service, "ann-token", "ann")).user, "ann");
    const other = await whoami(service, "ann-token", "bob");
    assert.equal(other.status, 403);
    assert.equal(typeof other.body.detail, "string");
  });

  test("probes and the API reference need no token and reveal no data", async () => {
    for (const path of ["/health/ready", "/health/live", "/docs", "/openapi.json"]) {
      const res = await fetch(service.url + path);
      assert.equal(res.status, 200, path);
      const text = await res.text();
      assert.ok(!text.includes("ann-token") && !text.includes("test-secret-token"), path);
    }
    assert.equal((await fetch(`${service.url}/info`)).status, 401);
  });
});

describe("token mode", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({
      AUTH_MODE: "token",
      AGENT_PATHS: WHOAMI,
      AUTH_USERS: JSON.stringify({ ann: "ann-token" }),
    });
  });
  after(() => service.close());

  test("the shared secret identifies only AUTH_SERVICE_USER_ID", async () => {
    assert.equal((await whoami(service, "test-secret-token")).user, "service");
    assert.equal((await whoami(service, "test-secret-token", "service")).user, "service");
    assert.equal((await whoami(service, "test-secret-token", "ann")).status, 403);
  });

  test("a user token acts only as its user", async () => {
    assert.equal((await whoami(service, "ann-token")).user, "ann");
    assert.equal((await whoami(service, "ann-token", "service")).status, 403);
  });
});

describe("development mode without credentials", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ ENV_MODE: "development", AUTH_SECRET: undefined, AGENT_PATHS: WHOAMI });
  });
  after(() => service.close());

  test("requests are accepted as the service user", async () => {
    const r = await whoami(service, null);
    assert.equal(r.status, 200);
    assert.equal(r.user, "service");
    assert.equal((await whoami(service, null, "someone-else")).status, 403);
  });
});

describe("development mode with credentials", () => {
  let service: RunningService;
  before(async () => {
    service = await startService({ ENV_MODE: "development", AGENT_PATHS: WHOAMI });
  });
  after(() => service.close());

  test("still requires the token", async () => {
    assert.equal((await whoami(service, null)).status, 401);
    assert.equal((await whoami(service, "test-secret-token")).status, 200);
  });
});
