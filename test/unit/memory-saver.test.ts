import { test } from "node:test";
import assert from "node:assert/strict";
import { Annotation, StateGraph } from "@langchain/langgraph";
import { JsonPlusSerializer, MemorySaver, type BaseCheckpointSaver, type Checkpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { ChangedChannelsMemorySaver } from "../../src/checkpoints/memory-saver.ts";
import { MemoryMessageRows } from "../../src/checkpoints/message-rows.ts";
import { RebuildingThreadRewinder } from "../../src/checkpoints/thread-rewind.ts";
import { converseWithInterrupt } from "../helpers/saver-conversation.ts";

const metadata: CheckpointMetadata = { source: "loop", step: 0, parents: {} };

function checkpoint(id: string, values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { v: 4, id, ts: new Date(0).toISOString(), channel_values: values, channel_versions: versions, versions_seen: {} };
}

/** A serializer that counts how often it writes `watched`. */
class CountingSerde extends JsonPlusSerializer {
  written = 0;
  constructor(private readonly watched: unknown) {
    super();
  }
  override dumpsTyped(data: unknown): Promise<[string, Uint8Array]> {
    if (data === this.watched) this.written++;
    return super.dumpsTyped(data);
  }
}

test("a conversation reads back as it does from LangGraph's MemorySaver: states, history and interrupts", async () => {
  const library = await (await converseWithInterrupt(new MemorySaver())).history();
  const service = await (await converseWithInterrupt(new ChangedChannelsMemorySaver())).history();
  assert.ok(library.length > 5);
  assert.deepEqual(service, library);
});

test("a value is stored by the checkpoint that changed it, and read back by every later one that did not", async () => {
  const big = { text: "x".repeat(1_000) };
  const serde = new CountingSerde(big);
  const saver = new ChangedChannelsMemorySaver(serde);
  let config = await saver.put({ configurable: { thread_id: "t", checkpoint_ns: "" } }, checkpoint("1", { big, n: 1 }, { big: 1, n: 1 }), metadata, { big: 1, n: 1 });
  config = await saver.put(config, checkpoint("2", { big, n: 2 }, { big: 1, n: 2 }), metadata, { n: 2 });
  config = await saver.put(config, checkpoint("3", { big, n: 3 }, { big: 1, n: 3 }), metadata, { n: 3 });
  assert.equal(serde.written, 1, "the unchanged value was serialised once");
  const values = [];
  for await (const tuple of saver.list({ configurable: { thread_id: "t" } })) values.push(tuple.checkpoint.channel_values);
  assert.deepEqual(values, [
    { big, n: 3 },
    { big, n: 2 },
    { big, n: 1 },
  ]);
  // A channel changed to empty (in newVersions, without a value) is empty from then on.
  await saver.put(config, checkpoint("4", { n: 4 }, { big: 4, n: 4 }), metadata, { big: 4, n: 4 });
  assert.deepEqual((await saver.getTuple({ configurable: { thread_id: "t", checkpoint_ns: "" } }))?.checkpoint.channel_values, { n: 4 });
});

/** A one-channel graph, run once, then forked by an update of its first checkpoint; what the fork reads. */
async function forkedValue(saver: BaseCheckpointSaver): Promise<unknown> {
  const State = Annotation.Root({ value: Annotation<string>() });
  const graph = new StateGraph(State)
    .addNode("step", (state: typeof State.State) => ({ value: `${state.value}!` }))
    .addEdge("__start__", "step")
    .compile({ checkpointer: saver });
  const config = { configurable: { thread_id: "t" }, durability: "sync" as const };
  await graph.invoke({ value: "a" }, config);
  const history = [];
  for await (const snapshot of graph.getStateHistory(config)) history.push(snapshot);
  const fork = await graph.updateState(history.at(-1)!.config, { value: "fork" });
  return (await graph.getState(fork)).values.value;
}

test("a fork reads back its own values, though it reuses the integer versions of the branch it left", async () => {
  assert.equal(await forkedValue(new MemorySaver()), "fork");
  assert.equal(await forkedValue(new ChangedChannelsMemorySaver()), "fork");
});

test("the memory backend's rewinder puts every value back, whichever checkpoint first stored it", async () => {
  const saver = new ChangedChannelsMemorySaver();
  const rewinder = new RebuildingThreadRewinder(saver, new MemoryMessageRows());
  let config = await saver.put({ configurable: { thread_id: "t", checkpoint_ns: "" } }, checkpoint("1", { kept: "k", n: 1 }, { kept: 1, n: 1 }), metadata, { kept: 1, n: 1 });
  for (const n of [2, 3, 4]) config = await saver.put(config, checkpoint(String(n), { kept: "k", n }, { kept: 1, n }), metadata, { n });
  await rewinder.rewind({ threadId: "t", base: "3", keepWrites: [], releasedKeys: [] });
  assert.deepEqual((await saver.getTuple({ configurable: { thread_id: "t", checkpoint_ns: "" } }))?.checkpoint.channel_values, { kept: "k", n: 3 });
  await rewinder.prune({ threadId: "t", keepFrom: "2", releasedKeys: [] });
  const values = [];
  for await (const tuple of saver.list({ configurable: { thread_id: "t" } })) values.push(tuple.checkpoint.channel_values);
  assert.deepEqual(values, [
    { kept: "k", n: 3 },
    { kept: "k", n: 2 },
  ]);
});

test("deleting a thread forgets its values", async () => {
  const saver = new ChangedChannelsMemorySaver();
  await saver.put({ configurable: { thread_id: "t", checkpoint_ns: "" } }, checkpoint("1", { a: 1 }, { a: 1 }), metadata, { a: 1 });
  await saver.deleteThread("t");
  assert.equal(await saver.getTuple({ configurable: { thread_id: "t", checkpoint_ns: "" } }), undefined);
  await saver.put({ configurable: { thread_id: "t", checkpoint_ns: "" } }, checkpoint("2", { a: 2 }, { a: 1 }), metadata, {});
  assert.deepEqual((await saver.getTuple({ configurable: { thread_id: "t", checkpoint_ns: "" } }))?.checkpoint.channel_values, {}, "nothing carried from the deleted thread");
});
