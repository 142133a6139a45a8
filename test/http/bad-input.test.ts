// The seeded bad-input generator, a few hundred requests: every route and method of /openapi.json,
// mutated (wrong types, nulls, huge strings, deep nesting, unknown fields, bad unicode, wrong
// methods, bad query parameters, malformed JSON, odd headers, …), over raw HTTP. Every answer must
// be a success or a JSON error below 500 with detail and error_code, in time, and every
// conversation must still read and run afterwards. The long run is `npm run test:reliability`.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { formatFigures } from "../helpers/bad-input/campaign.ts";
import { campaign, describeFailures, HTTP_LAYER_WEIGHTS, SERVICE_WEIGHTS, startCampaignService } from "../helpers/bad-input/service.ts";
import type { RunningService } from "../helpers/service.ts";

const SEED = Number(process.env.BAD_INPUT_SEED ?? 20_110);

describe("bad input", () => {
  let service: RunningService;
  before(async () => {
    service = await startCampaignService();
  });
  after(() => service.close());

  test("400 mutated requests: no 5xx, no hang, every error a JSON {detail, error_code}, every conversation intact", async (t) => {
    const figures = await campaign(service, { seed: SEED, requests: 400, weights: SERVICE_WEIGHTS });
    for (const line of formatFigures("bad input", figures).split("\n")) t.diagnostic(line);
    assert.equal(figures.sent, 400);
    assert.equal(figures.failures.length, 0, describeFailures(figures.failures));
    assert.deepEqual(figures.conversations.broken, []);
    assert.equal(figures.conversations.checked > 0, true);
    // The campaign reached past validation: successes, refusals and conflicts all occurred.
    for (const status of ["200", "201", "401", "404", "422"]) assert.ok((figures.byStatus[status] ?? 0) > 0, `no ${status} answers`);
    // Nothing the service logged at error level: a 4xx is not an incident.
    assert.deepEqual(service.logs.filter((line) => (line.level as number) >= 50), []);
  });
});

// Framing, Content-Encoding, percent-encoding, conditional requests and Node's parser: the same
// strict rule, in their own families.
describe("bad input at the HTTP layer", () => {
  let service: RunningService;
  before(async () => {
    service = await startCampaignService();
  });
  after(() => service.close());

  test("80 requests in their families: the same strict rule", async (t) => {
    const figures = await campaign(service, { seed: SEED + 1, requests: 80, weights: HTTP_LAYER_WEIGHTS, timeoutMs: 5_000 });
    for (const line of formatFigures("bad input (HTTP layer)", figures).split("\n")) t.diagnostic(line);
    assert.equal(figures.failures.length, 0, describeFailures(figures.failures));
  });
});
