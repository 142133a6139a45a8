// The original Python client's pattern (issue 29, item 13): break out of a stream after its first
// event and at once send the next turn on the same thread. With two workers the next turn often
// lands on the other worker while the first run is still settling; the default conversation queue
// (THREAD_QUEUE_TIMEOUT, 5 s) covers that release, so every next turn is answered, none gets 409.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { startCluster, TOKEN, type Cluster } from "./cluster-helper.ts";

const TURNS = 100;

describe("a stream closed early, then the next turn at once, on two workers", () => {
  let cluster: Cluster;
  before(async () => {
    // The service's own default queue wait: the helper's THREAD_QUEUE_TIMEOUT=0 removed.
    cluster = await startCluster({ WEB_CONCURRENCY: "2", THREAD_QUEUE_TIMEOUT: "" });
  });
  after(async () => {
    await cluster?.stop("SIGKILL");
  });

  test(`${TURNS} times: the next turn is answered 200, never 409 conversation_busy`, async () => {
    const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    const statuses: number[] = [];
    for (let i = 0; i < TURNS; i++) {
      const thread = randomUUID();
      const leave = new AbortController();
      const stream = await fetch(`${cluster.url}/stream`, {
        method: "POST",
        headers,
        body: JSON.stringify({ input: { message: "hello" }, thread_id: thread, stream_tokens: true }),
        signal: leave.signal,
      });
      assert.equal(stream.status, 200);
      // The first event has arrived: the run holds the conversation. Leave, and go on at once.
      await stream.body!.getReader().read();
      leave.abort();
      const next = await fetch(`${cluster.url}/invoke`, {
        method: "POST",
        headers,
        body: JSON.stringify({ input: { message: "and then?" }, thread_id: thread }),
      });
      statuses.push(next.status);
      await next.arrayBuffer();
    }
    const busy = statuses.filter((status) => status === 409).length;
    assert.equal(busy, 0, `${busy} of ${TURNS} next turns found the conversation busy`);
    assert.ok(statuses.every((status) => status === 200), `statuses: ${[...new Set(statuses)].join(", ")}`);
  });
});
