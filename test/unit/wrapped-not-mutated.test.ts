// The composition root wraps what it does not own: an agent's graph gets the service's checkpointer
// and callbacks on a copy, and the message store is timed by a saver around it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { CallbackManager } from "@langchain/core/callbacks/manager";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { MemorySaver } from "@langchain/langgraph-checkpoint";
import { serviceGraph } from "../../src/agents/service-graph.ts";
import { MemoryMessageRows } from "../../src/checkpoints/message-rows.ts";
import { MessageStoreSaver } from "../../src/checkpoints/message-store.ts";
import { messageStoreOf, TimedSaver, type SaverOperation } from "../../src/checkpoints/timed-saver.ts";

class Recorder extends BaseCallbackHandler {
  name = "recorder";
  readonly chains: string[] = [];
  constructor(private readonly label: string) {
    super();
  }
  override handleChainStart(): void {
    this.chains.push(this.label);
  }
}

function echoGraph() {
  return new StateGraph(MessagesAnnotation)
    .addNode("answer", (state: typeof MessagesAnnotation.State) => ({ messages: [new AIMessage(`seen ${state.messages.length}`)] }))
    .addEdge("__start__", "answer")
    .compile();
}

test("the service's callbacks reach a copy of the agent's graph, after the agent's own; the agent's graph keeps its own", async () => {
  const own = new Recorder("agent");
  const graph = echoGraph().withConfig({ callbacks: [own] });
  const tracing = new Recorder("service");
  const served = serviceGraph(graph, new MemorySaver(), [tracing]);

  assert.deepEqual(graph.config?.callbacks, [own]);
  assert.deepEqual(served.config?.callbacks, [own, tracing]);
  await served.invoke({ messages: [new HumanMessage("hi")] }, { configurable: { thread_id: "t" } });
  assert.ok(tracing.chains.length > 0);
  assert.equal(own.chains.length, tracing.chains.length);

  const untraced = serviceGraph(graph, new MemorySaver());
  assert.deepEqual(untraced.config?.callbacks, [own]);
});

test("a graph configured with a callback manager is refused when there are handlers to add", () => {
  const withManager = echoGraph().withConfig({ callbacks: new CallbackManager() });
  assert.throws(() => serviceGraph(withManager, new MemorySaver(), [new Recorder("service")]), /callback manager/);
  assert.doesNotThrow(() => serviceGraph(withManager, new MemorySaver()));
});

test("the timed saver measures each storage operation of the message store and leaves the store as it was", async () => {
  const store = new MessageStoreSaver(new MemorySaver(), new MemoryMessageRows(), 100);
  const ownMethods = Object.getOwnPropertyNames(store);
  const timed: Array<[string, SaverOperation]> = [];
  const saver = new TimedSaver(store, "memory", {
    labels: ({ backend, operation }) => ({ observe: () => void timed.push([backend, operation]) }),
  });
  const graph = serviceGraph(echoGraph(), saver);
  const config = { configurable: { thread_id: "t" } };
  await graph.invoke({ messages: [new HumanMessage("one")] }, config);
  for await (const _ of saver.list(config)) void _;
  await saver.deleteThread("t");

  const operations = new Set(timed.map(([, operation]) => operation));
  for (const operation of ["getTuple", "put", "putWrites", "list", "deleteThread"] as const) assert.ok(operations.has(operation), operation);
  assert.ok(timed.every(([backend]) => backend === "memory"));
  assert.deepEqual(Object.getOwnPropertyNames(store), ownMethods);
  assert.equal(messageStoreOf(saver), store);
  assert.equal(messageStoreOf(store), store);
  assert.equal(messageStoreOf(new MemorySaver()), undefined);
});

test("the timed saver times a failed operation too and hands its failure on as a rejection, thrown or rejected", async () => {
  const failing = new (class extends MessageStoreSaver {
    override getTuple(): Promise<undefined> {
      throw new Error("thrown");
    }
    override putWrites(): Promise<void> {
      return Promise.reject(new Error("rejected"));
    }
  })(new MemorySaver(), new MemoryMessageRows(), 100);
  const timed: SaverOperation[] = [];
  const saver = new TimedSaver(failing, "memory", { labels: ({ operation }) => ({ observe: () => void timed.push(operation) }) });
  const config = { configurable: { thread_id: "t", checkpoint_id: "c" } };
  const read = saver.getTuple(config);
  assert.ok(read instanceof Promise, "a thrown failure comes back as a rejected promise");
  await assert.rejects(read, /thrown/);
  await assert.rejects(saver.putWrites(config, [], "task"), /rejected/);
  assert.deepEqual(timed, ["getTuple", "putWrites"]);
});
