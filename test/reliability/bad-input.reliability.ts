// The seeded bad-input generator at length: 2,000 requests on each checkpoint backend (memory,
// SQLite, PostgreSQL), every mutation family, then requests whose bodies never finish. The rule is
// the one of test/http/bad-input.test.ts, for the service's own families and the HTTP layer's alike.
// BAD_INPUT_SEED and BAD_INPUT_REQUESTS change the seed and the count per backend.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { formatFigures, type Figures } from "../helpers/bad-input/campaign.ts";
import { FAMILY_WEIGHTS } from "../helpers/bad-input/families.ts";
import { campaign, describeFailures, startCampaignService } from "../helpers/bad-input/service.ts";
import { memoryBackend, postgresBackend, sqliteBackend } from "../http/history-backends.ts";
import { recordFigures } from "./figures.ts";

const SEED = Number(process.env.BAD_INPUT_SEED ?? 51_100);
const REQUESTS = Number(process.env.BAD_INPUT_REQUESTS ?? 2_000);
const INCOMPLETE_BODIES = 12;

const results: Array<{ label: string; figures: Figures }> = [];

function own(figures: Figures) {
  return figures.failures.filter((f) => !f.owner);
}
function elsewhere(figures: Figures) {
  return figures.failures.filter((f) => f.owner);
}

after(() => {
  const total = {
    sent: 0,
    serverErrors: 0,
    hung: 0,
    noResponse: 0,
    byStatus: {} as Record<string, number>,
    byCode: {} as Record<string, number>,
    ownFailures: 0,
    otherFailures: 0,
    broken: 0,
  };
  for (const { figures } of results) {
    total.sent += figures.sent;
    total.serverErrors += figures.serverErrors;
    total.hung += figures.hung;
    total.noResponse += figures.noResponse;
    total.ownFailures += own(figures).length;
    total.otherFailures += elsewhere(figures).length;
    total.broken += figures.conversations.broken.length;
    for (const [status, n] of Object.entries(figures.byStatus)) total.byStatus[status] = (total.byStatus[status] ?? 0) + n;
    for (const [code, n] of Object.entries(figures.byCode)) total.byCode[code] = (total.byCode[code] ?? 0) + n;
  }
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, n]) => `${key}: ${n}`)
      .join(", ");
  recordFigures("bad-input", {
    title: "Bad-input generator (test/reliability/bad-input.reliability.ts)",
    lines: [
      `total: ${total.sent} requests; 5xx ${total.serverErrors}; hung ${total.hung}; no response ${total.noResponse}; ` +
        `failures in the service's families ${total.ownFailures}, in the HTTP layer's families ${total.otherFailures}; broken conversations ${total.broken}`,
      `by status: ${list(total.byStatus)}`,
      `errors by code: ${list(total.byCode)}`,
      ...results.flatMap(({ label, figures }) => formatFigures(label, figures).split("\n")),
    ],
    data: { total, runs: results.map(({ label, figures }) => ({ label, ...figures, failures: figures.failures.slice(0, 50) })) },
  });
});

const backends = [memoryBackend, sqliteBackend, postgresBackend];

backends.forEach((makeBackend, i) => {
  const backend = makeBackend();
  describe(`bad input on ${backend.name}`, () => {
    let figures: Figures;

    test(`${REQUESTS} mutated requests in every family`, async (t) => {
      const service = await startCampaignService(backend.env);
      try {
        figures = await campaign(service, { seed: SEED + i, requests: REQUESTS, weights: FAMILY_WEIGHTS });
      } finally {
        await service.close();
        await backend.cleanup();
      }
      results.push({ label: `${backend.name}`, figures });
      for (const line of formatFigures(backend.name, figures).split("\n")) t.diagnostic(line);
      assert.equal(figures.sent, REQUESTS);
      assert.equal(own(figures).length, 0, describeFailures(own(figures)));
      assert.deepEqual(figures.conversations.broken, []);
    });

    test("HTTP-layer families: the same rule", () => {
      assert.ok(figures, "the campaign ran");
      assert.equal(elsewhere(figures).length, 0, describeFailures(elsewhere(figures)));
    });
  });
});

describe("bad input: bodies that never finish", () => {
  test(`${INCOMPLETE_BODIES} requests announcing more body than they send are answered, not left hanging`, async (t) => {
    const service = await startCampaignService();
    let figures: Figures;
    try {
      figures = await campaign(service, { seed: SEED + 10, requests: INCOMPLETE_BODIES, weights: [["incomplete-body", 1]], timeoutMs: 20_000 });
    } finally {
      await service.close();
    }
    results.push({ label: "memory, incomplete bodies", figures });
    for (const line of formatFigures("incomplete bodies", figures).split("\n")) t.diagnostic(line);
    assert.equal(figures.failures.length, 0, describeFailures(figures.failures));
  });
});
