import { test } from "node:test";
import assert from "node:assert/strict";
import { AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, ToolMessage, type BaseMessage, type BaseMessageLike } from "@langchain/core/messages";
import { MessagesAnnotation, REMOVE_ALL_MESSAGES, StateGraph, messagesStateReducer, type BinaryOperatorAggregate } from "@langchain/langgraph";
import { MemorySaver } from "@langchain/langgraph-checkpoint";
import { incrementalMessagesReducer } from "../../src/agents/incremental-messages.ts";
import { serviceGraph } from "../../src/agents/service-graph.ts";

type Reducer = (left: BaseMessageLike[] | BaseMessageLike, right: BaseMessageLike[] | BaseMessageLike) => BaseMessage[];

/** What a result is made of; ids the reducer generated (absent from the input) are compared by position only. */
function shape(messages: BaseMessage[], givenIds: ReadonlySet<string>) {
  return messages.map((m) => [m.getType(), m.constructor.name, m.content, givenIds.has(m.id!) ? m.id : "(generated)"]);
}

/**
 * Runs one scenario (a start list and the steps' writes, built fresh for each reducer since both
 * assign ids in place) through LangGraph's reducer and ours, step by step, and compares every state.
 */
function sameAsLangGraph(name: string, scenario: () => { start: BaseMessageLike[]; steps: Array<BaseMessageLike[] | BaseMessageLike>; mutate?: (list: BaseMessage[], step: number) => void }) {
  const run = (reduce: Reducer) => {
    const { start, steps, mutate } = scenario();
    const given = new Set<string>();
    const note = (items: unknown) => {
      for (const item of Array.isArray(items) ? items : [items]) {
        const id = (item as { id?: unknown })?.id;
        if (typeof id === "string") given.add(id);
      }
    };
    note(start);
    const states: Array<ReturnType<typeof shape> | string> = [];
    let state: BaseMessage[] = start as BaseMessage[];
    for (const [i, step] of steps.entries()) {
      note(step);
      try {
        state = reduce(state, step);
        mutate?.(state, i);
        states.push(shape(state, given));
      } catch (error) {
        states.push(`throws: ${(error as Error).message.replace(/'[^']*'/, "'…'")}`);
      }
    }
    return states;
  };
  assert.deepEqual(run(incrementalMessagesReducer), run(messagesStateReducer), name);
}

const human = (id: string | undefined, content = `q ${id}`) => new HumanMessage({ content, ...(id ? { id } : {}) });
const ai = (id: string | undefined, content = `a ${id}`) => new AIMessage({ content, ...(id ? { id } : {}) });

test("the incremental reducer gives LangGraph's results: appends, updates by id, duplicates, removals", () => {
  sameAsLangGraph("appending with and without ids", () => ({ start: [human("1"), ai("2")], steps: [[human("3")], [ai(undefined)], human(undefined), [human("4"), ai("5")]] }));
  sameAsLangGraph("updating by id keeps the position", () => ({ start: [human("1"), ai("2"), human("3")], steps: [[ai("2", "revised")], [human("1", "edited"), human("6")]] }));
  sameAsLangGraph("one id twice in a step", () => ({ start: [human("1")], steps: [[ai("2", "first"), ai("2", "second")], [human("1", "x"), human("1", "y")]] }));
  sameAsLangGraph("a duplicated id in the start list: the last one is updated", () => ({ start: [human("1"), human("1", "again"), ai("2")], steps: [[human("1", "new")]] }));
  sameAsLangGraph("RemoveMessage", () => ({ start: [human("1"), ai("2"), human("3")], steps: [[new RemoveMessage({ id: "2" })], [human("4"), new RemoveMessage({ id: "4" })], [new RemoveMessage({ id: "nope" })]] }));
  sameAsLangGraph("removing everything", () => ({ start: [human("1"), ai("2")], steps: [[new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), human("5")], [human("6")]] }));
  sameAsLangGraph("dicts, strings, tuples and chunks are normalised", () => ({
    start: [],
    steps: ["hello", [{ role: "assistant", content: "hi", id: "d1" }], [["human", "tuple"]], [new AIMessageChunk({ content: "chunk", id: "c1" })], [new AIMessageChunk({ content: "chunk2", id: "c1" })]],
  }));
  sameAsLangGraph("a start list that still needs normalising", () => ({ start: [{ role: "user", content: "raw" }, human(undefined), human("2")], steps: [[ai("3")], [ai("3", "again")]] }));
  sameAsLangGraph("tool calls and their answers", () => ({
    start: [human("1")],
    steps: [[new AIMessage({ id: "2", content: "", tool_calls: [{ id: "t", name: "f", args: {} }] })], [new ToolMessage({ id: "3", content: "r", tool_call_id: "t" })]],
  }));
});

test("a list changed in place between steps is read as it is, not as it was returned", () => {
  sameAsLangGraph("a node pushes onto the channel's list, then returns the message", () => ({
    start: [human("1")],
    steps: [[ai("2")], [human("3")], [human("3", "updated")]],
    mutate: (list, step) => {
      if (step === 1) list.push({ role: "user", content: "pushed, not yet a message" } as never);
    },
  }));
  sameAsLangGraph("a node replaces an element in place", () => ({
    start: [human("1"), ai("2")],
    steps: [[human("3")], [ai("7")], [ai("7", "x")]],
    mutate: (list, step) => {
      if (step === 0) list[1] = ai("7", "swapped in");
    },
  }));
});

test("it leaves the lists it is given as they were and does not hand out the same list twice", () => {
  const start = [human("1"), ai("2")];
  const first = incrementalMessagesReducer(start, [human("3")]);
  const second = incrementalMessagesReducer(first, [ai("2", "changed")]);
  assert.deepEqual(start.map((m) => m.id), ["1", "2"]);
  assert.deepEqual(first.map((m) => m.content), ["q 1", "a 2", "q 3"]);
  assert.deepEqual(second.map((m) => m.content), ["q 1", "changed", "q 3"]);
  // Two steps from the same list (a fork) do not see each other's messages.
  const forkA = incrementalMessagesReducer(first, [human("A")]);
  const forkB = incrementalMessagesReducer(first, [human("B"), human("A", "B's A")]);
  assert.deepEqual(forkA.map((m) => m.id), ["1", "2", "3", "A"]);
  assert.deepEqual(forkB.map((m) => [m.id, m.content]), [["1", "q 1"], ["2", "a 2"], ["3", "q 3"], ["B", "q B"], ["A", "B's A"]]);
  assert.deepEqual(incrementalMessagesReducer(forkA, [human("A", "again")]).map((m) => m.content), ["q 1", "a 2", "q 3", "again"]);
});

function seenGraph() {
  return new StateGraph(MessagesAnnotation)
    .addNode("answer", (state: typeof MessagesAnnotation.State) => ({ messages: [new AIMessage(`seen ${state.messages.length}`)] }))
    .addEdge("__start__", "answer")
    .compile();
}

test("the service runs a copy of an agent's graph with the incremental reducer; the agent's graph is untouched", async () => {
  const graph = seenGraph();
  const saver = new MemorySaver();
  const served = serviceGraph(graph, saver, [], { incrementalMessagesReducer: true });
  assert.notEqual(served, graph);
  assert.equal(graph.checkpointer, undefined);
  assert.equal((graph.channels.messages as BinaryOperatorAggregate<unknown, unknown>).operator, messagesStateReducer);
  assert.equal((served.channels.messages as BinaryOperatorAggregate<unknown, unknown>).operator, incrementalMessagesReducer);
  assert.equal(served.checkpointer, saver);

  const config = { configurable: { thread_id: "t" } };
  await served.invoke({ messages: [new HumanMessage("one")] }, config);
  const state = await served.invoke({ messages: [new HumanMessage("two")] }, config);
  assert.deepEqual(state.messages.map((m: BaseMessage) => m.content), ["one", "seen 1", "two", "seen 3"]);
});

test("with the shortcut off (the default) the copy keeps LangGraph's reducer, and both copies give the same states", async () => {
  const graph = seenGraph();
  const library = serviceGraph(graph, new MemorySaver());
  const incremental = serviceGraph(graph, new MemorySaver(), [], { incrementalMessagesReducer: true });
  assert.equal((library.channels.messages as BinaryOperatorAggregate<unknown, unknown>).operator, messagesStateReducer);
  const states = async (served: typeof library) => {
    const config = { configurable: { thread_id: "t" } };
    const seen = [];
    for (const input of [[human("1")], [human("2"), ai("3")], [human("1", "edited")], [new RemoveMessage({ id: "3" })]]) {
      const state = await served.invoke({ messages: input }, config);
      seen.push(state.messages.map((m: BaseMessage) => [m.getType(), m.content, m.id?.length]));
    }
    return seen;
  };
  assert.deepEqual(await states(incremental), await states(library));
});
