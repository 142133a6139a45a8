// A run reads its conversation's latest checkpoint once: the head read under the lock (message cap,
// pending interrupts) is the read the graph starts from. And a head read kept for a run that never
// started is not served to anyone.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { RunnableConfig } from "@langchain/core/runnables";
import { storageKey } from "../../src/auth/storage-key.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { memoryBackend, sqliteBackend, type BackendUnderTest } from "./history-backends.ts";

const AGENT = "chatbot-agent";

/** Count the reads of latest root checkpoints that reach the saver beneath the message store. */
function countReads(service: RunningService): { readonly reads: number; restore(): void } {
  const inner = service.runtime.checkpoints.saver.inner;
  const read = inner.getTuple.bind(inner);
  const counter = { reads: 0, restore: () => void (inner.getTuple = read) };
  inner.getTuple = (config: RunnableConfig) => {
    if (config.configurable?.checkpoint_id === undefined && (config.configurable?.checkpoint_ns ?? "") === "") counter.reads++;
    return read(config);
  };
  return counter;
}

async function turn(service: RunningService, path: string, thread: string, message: string): Promise<number> {
  const response = await call(service, "POST", path, { thread_id: thread, input: { message } });
  await response.text();
  return response.status;
}

for (const make of [memoryBackend, sqliteBackend]) {
  describe(`one checkpoint read per run (${make().name})`, () => {
    let backend: BackendUnderTest;
    let service: RunningService;
    before(async () => {
      backend = make();
      service = await startService({ ...backend.env, CONVERSATION_MAX_MESSAGES: "6" });
    });
    after(async () => {
      await service?.close();
      await backend?.cleanup();
    });

    for (const path of ["/invoke", "/stream", "/stream/jsonl"]) {
      test(`a turn of an existing conversation through ${path} reads its checkpoint once`, async () => {
        const thread = `reads${path.replaceAll("/", "-")}`;
        assert.equal(await turn(service, path, thread, "first"), 200);
        const counter = countReads(service);
        try {
          assert.equal(await turn(service, path, thread, "second"), 200);
          assert.equal(counter.reads, 1);
        } finally {
          counter.restore();
        }
        const history = await (await call(service, "GET", `/history?thread_id=${thread}`)).json();
        assert.equal((history as { total: number }).total, 4);
      });
    }

    test("a run refused after its head read keeps nothing: the next read of the conversation reads storage", async () => {
      const thread = "refused-then-read";
      const key = storageKey("service", AGENT, thread);
      const agent = service.runtime.registry.get(AGENT)!;
      for (let i = 0; i < 3; i++) assert.equal(await turn(service, "/invoke", thread, `m${i}`), 200);
      assert.equal(await turn(service, "/invoke", thread, "one too many"), 413);
      // Had the refused run's head read been kept, this read would be served from it, and would go
      // on being served from it after another worker wrote the conversation.
      const counter = countReads(service);
      try {
        const state = await agent.graph.getState({ configurable: { thread_id: key } });
        assert.equal((state.values as { messages: unknown[] }).messages.length, 6);
        assert.equal(counter.reads, 1);
      } finally {
        counter.restore();
      }
    });
  });
}
