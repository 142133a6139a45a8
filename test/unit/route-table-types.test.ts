// The route table types each handler's answer: a body of the wrong shape, or a status the
// operation does not declare, does not compile (tsc runs over the tests; each line below must fail).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { HandlerOf } from "../../src/http/operation.ts";
import type { Operations } from "../../src/http/operations.ts";

// @ts-expect-error a history page needs total and next_offset
const missingFields: HandlerOf<Operations["readHistory"]> = async () => ({ status: 200, body: { messages: [] } });

// @ts-expect-error /info declares no 201 answer
const undeclaredStatus: HandlerOf<Operations["info"]> = () => ({ status: 201, body: { agents: [], default_agent: "a" } });

// @ts-expect-error a stream operation answers with a run's events, not a JSON body
const jsonForStream: HandlerOf<Operations["stream"]> = async () => ({ status: 200, body: {} });

const declared: HandlerOf<Operations["liveness"]> = () => ({ status: 503, body: { status: "stalled" } });

test("handlers are typed by the route table (checked by tsc)", () => {
  assert.equal(typeof missingFields, "function");
  assert.equal(typeof undeclaredStatus, "function");
  assert.equal(typeof jsonForStream, "function");
  assert.deepEqual(declared({} as Parameters<typeof declared>[0]), { status: 503, body: { status: "stalled" } });
});
