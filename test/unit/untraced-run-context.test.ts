// With no tracer, LangChain's run context is carried by objects that inherit from one RunTree
// instead of a new RunTree per runnable; everything that reads the context sees what it saw before.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { CallbackManager } from "@langchain/core/callbacks/manager";
import { getContextVariable, setContextVariable } from "@langchain/core/context";
import { AIMessage } from "@langchain/core/messages";
import { RunnableLambda } from "@langchain/core/runnables";
import { _CONTEXT_VARIABLES_KEY, AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import { getConfig, MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { MemorySaver } from "@langchain/langgraph-checkpoint";
import { isRunTree, type RunTree } from "langsmith/run_trees";
import { getCurrentRunTree, traceable } from "langsmith/traceable";
import { installUntracedRunContext, uninstallUntracedRunContext } from "../../src/observability/untraced-run-context.ts";

after(() => uninstallUntracedRunContext());

interface Seen {
  threadId: unknown;
  runTree: RunTree;
  traced: string;
  contextAfterSet: unknown;
  nested: unknown;
}

/** A two-node graph whose nodes report what LangChain's run context holds. */
function reportingGraph(seen: Seen[]) {
  const nested = RunnableLambda.from(() => getContextVariable("answer"));
  const inner = traceable(async () => `traced in ${String(getCurrentRunTree().tracingEnabled)}`, { name: "inner" });
  const report = async () => {
    const runTree = getCurrentRunTree();
    const traced = await inner();
    setContextVariable("answer", 42);
    seen.push({ threadId: getConfig()?.configurable?.thread_id, runTree, traced, contextAfterSet: getConfig()?.configurable?.thread_id, nested: await nested.invoke({}) });
    return { messages: [new AIMessage("ok")] };
  };
  return new StateGraph(MessagesAnnotation)
    .addNode("first", report)
    .addNode("second", report)
    .addEdge("__start__", "first")
    .addEdge("first", "second")
    .compile({ checkpointer: new MemorySaver() });
}

async function runReporting(): Promise<Seen[]> {
  const seen: Seen[] = [];
  await reportingGraph(seen).invoke({ messages: [] }, { configurable: { thread_id: "t-1" } });
  return seen;
}

test("LangChain's own context builds a RunTree per runnable (what the short path saves)", async () => {
  const seen = await runReporting();
  assert.equal(seen.length, 2);
  for (const step of seen) assert.ok(Object.hasOwn(step.runTree, "id"), "a RunTree of its own");
});

test("installed: nodes see their config, a RunTree with tracing off, traceable, context variables, and no RunTree of their own", async () => {
  installUntracedRunContext({ tracingFromEnvironment: false });
  const seen = await runReporting();
  assert.equal(seen.length, 2);
  for (const step of seen) {
    assert.equal(step.threadId, "t-1");
    assert.ok(isRunTree(step.runTree));
    assert.equal(step.runTree.tracingEnabled, false);
    assert.ok(!Object.hasOwn(step.runTree, "id"), "inherits from the one template");
    assert.equal(step.traced, "traced in false");
    assert.equal(step.contextAfterSet, "t-1", "setContextVariable keeps the config in the context");
    assert.equal(step.nested, 42);
  }
  // Each carries its own copies of what a run may change: traceable's child went to its own node's carrier.
  const [first, second] = seen as [Seen, Seen];
  assert.notEqual(first.runTree.child_runs, second.runTree.child_runs);
  assert.notEqual(first.runTree.extra, second.runTree.extra);
  assert.notEqual(first.runTree.extra.metadata, second.runTree.extra.metadata);
  assert.deepEqual(Object.getPrototypeOf(first.runTree).child_runs, []);
  for (const step of seen) {
    for (const key in step.runTree) {
      const value = (step.runTree as unknown as Record<string, unknown>)[key];
      if (key !== "client" && value !== null && typeof value === "object") assert.ok(Object.hasOwn(step.runTree, key), `${key} is the carrier's own`);
    }
  }
});

test("what a node can see of its run context is the same on LangChain's path and on the short one", async () => {
  const observed = (seen: Seen[]) =>
    seen.map((step) => ({
      threadId: step.threadId,
      isRunTree: isRunTree(step.runTree),
      tracingEnabled: step.runTree.tracingEnabled,
      traced: step.traced,
      contextAfterSet: step.contextAfterSet,
      nested: step.nested,
      metadata: step.runTree.extra.metadata as unknown,
      childRuns: step.runTree.child_runs.map((child) => child.name),
    }));
  uninstallUntracedRunContext();
  const own = observed(await runReporting());
  installUntracedRunContext({ tracingFromEnvironment: false });
  const short = observed(await runReporting());
  uninstallUntracedRunContext();
  assert.equal(own.length, 2);
  assert.deepEqual(short, own);
});

/** A handler with the name LangChain looks for (the LangSmith tracer's). */
class NamedTracer extends BaseCallbackHandler {
  name = "langchain_tracer";
}

test("installed: a tracer among the callbacks, a traced parent run or tracing by environment take LangChain's own path", async () => {
  installUntracedRunContext({ tracingFromEnvironment: false });
  const storeDuring = (config: object) => AsyncLocalStorageProviderSingleton.runWithConfig(config, () => AsyncLocalStorageProviderSingleton.getInstance().getStore()) as RunTree;

  assert.ok(!Object.hasOwn(storeDuring({}), "id"));
  assert.ok(Object.hasOwn(storeDuring({ callbacks: [new NamedTracer()] }), "id"));

  const tracedParent = { tracingEnabled: true, extra: {} };
  const inTracedParent = AsyncLocalStorageProviderSingleton.getInstance().run(tracedParent, () => storeDuring({}));
  assert.ok(Object.hasOwn(inTracedParent, "id"));

  uninstallUntracedRunContext();
  installUntracedRunContext({ tracingFromEnvironment: true });
  assert.ok(Object.hasOwn(storeDuring({}), "id"));
  uninstallUntracedRunContext();
});

test("installed: a runnable that asks for no root run gets LangChain's own context: only the context variables", async () => {
  const storage = AsyncLocalStorageProviderSingleton.getInstance();
  const during = () => AsyncLocalStorageProviderSingleton.runWithConfig({ configurable: { x: 1 } }, () => storage.getStore(), true);
  const contexts = async () => {
    const withVariable = RunnableLambda.from(() => {
      setContextVariable("answer", 42);
      return during();
    });
    return { outside: during(), inside: (await withVariable.invoke({})) as unknown };
  };
  // LangChain configures a callback manager only to look for a tracer: what the short path skips.
  const manager = CallbackManager as unknown as { _configureSync: (...args: unknown[]) => unknown };
  const configure = manager._configureSync;
  let configured = 0;
  manager._configureSync = function (...args: unknown[]) {
    configured++;
    return configure.apply(this, args);
  };
  try {
    const own = await contexts();
    configured = 0;
    during();
    assert.equal(configured, 1);

    installUntracedRunContext({ tracingFromEnvironment: false });
    const short = await contexts();
    configured = 0;
    during();
    assert.equal(configured, 0);

    assert.equal(own.outside, undefined);
    assert.equal(short.outside, undefined);
    assert.deepEqual(own.inside, { [_CONTEXT_VARIABLES_KEY]: { answer: 42 } });
    assert.deepEqual(short.inside, { [_CONTEXT_VARIABLES_KEY]: { answer: 42 } });
  } finally {
    manager._configureSync = configure;
    uninstallUntracedRunContext();
  }
});
