// LangGraph's own JS SDK (@langchain/langgraph-sdk) against the real service, over loopback, on each
// backend: the calls a user of the SDK makes (assistants, threads, streamed and waited runs, state,
// history, search, interrupts answered with a command, a fork from a checkpoint, cancel, a busy
// thread), one storage shared with agenthost's own API, and one user's threads invisible to another.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import { storageKey } from "../../src/auth/storage-key.ts";
import { gate } from "../fixtures/gated-agent.ts";
import { call, startService, TEST_TOKEN, type RunningService } from "../helpers/service.ts";
import { memoryBackend, postgresBackend, sqliteBackend, type BackendUnderTest } from "../http/history-backends.ts";

const AGENTS = JSON.stringify(["./test/fixtures/gated-agent.ts:gatedAgent", "./test/fixtures/interrupt-agents.ts:askName"]);
const CHATBOT = "chatbot-agent";

interface StreamPart {
  readonly event: string;
  readonly data: unknown;
}

type Message = { type: string; content: unknown; id?: string | null };

const messagesOf = (values: unknown): Message[] => ((values as { messages?: Message[] } | undefined)?.messages ?? []);

async function collect(stream: AsyncIterable<StreamPart>): Promise<StreamPart[]> {
  const parts: StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

for (const make of [memoryBackend, sqliteBackend, postgresBackend]) {
  describe(`LangGraph SDK against agenthost (${make().name})`, { concurrency: false }, () => {
    let backend: BackendUnderTest;
    let service: RunningService;
    let client: Client;

    before(async () => {
      backend = make();
      service = await startService({
        ...backend.env,
        AGENT_PATHS: AGENTS,
        AUTH_USERS: JSON.stringify({ alice: "alice-token", bob: "bob-token" }),
      });
      client = new Client({ apiUrl: service.url, apiKey: TEST_TOKEN });
    });
    after(async () => {
      gate.open();
      await service?.close();
      await backend?.cleanup();
    });

    test("assistants: one per agent, found by search and by graph id, with a stable id", async () => {
      const found = await client.assistants.search({ graphId: CHATBOT });
      assert.equal(found.length, 1);
      assert.equal(found[0]!.graph_id, CHATBOT);
      // LangGraph's server gives a graph of this name the same id (uuid5 in its namespace).
      assert.equal(found[0]!.assistant_id, "b417c38e-7e91-5a25-950f-e4fe1e8d5c8f");
      const again = await client.assistants.get(CHATBOT);
      assert.equal(again.assistant_id, found[0]!.assistant_id);
      assert.deepEqual(await client.assistants.get(found[0]!.assistant_id), again);
      const all = await client.assistants.search({ limit: 100 });
      assert.ok(all.some((assistant) => assistant.graph_id === "gated-agent"));
      assert.deepEqual(await client.assistants.getSubgraphs(CHATBOT), {});
      const graph = await client.assistants.getGraph(CHATBOT);
      assert.ok(Array.isArray((graph as { nodes?: unknown }).nodes));
    });

    test("a thread, a streamed run (values, messages-tuple, updates), its state, and the same conversation in agenthost's own history", async () => {
      const thread = await client.threads.create({ metadata: { topic: "greeting" } });
      assert.equal(thread.status, "idle");
      const parts = await collect(
        client.runs.stream(thread.thread_id, CHATBOT, {
          input: { messages: [{ role: "user", content: "Hello there" }] },
          streamMode: ["values", "messages-tuple", "updates"],
        }),
      );
      assert.equal(parts[0]!.event, "metadata");
      assert.equal(typeof (parts[0]!.data as { run_id?: unknown }).run_id, "string");
      const values = parts.filter((part) => part.event === "values");
      assert.ok(values.length >= 2, JSON.stringify(parts.map((part) => part.event)));
      const last = messagesOf(values.at(-1)!.data);
      assert.deepEqual(
        last.map((message) => message.type),
        ["human", "ai"],
      );
      assert.ok(parts.some((part) => part.event === "messages"), "messages-tuple chunks arrive as `messages` events");
      assert.ok(parts.some((part) => part.event === "updates"));
      assert.ok(!parts.some((part) => part.event === "error"));

      const state = await client.threads.getState(thread.thread_id);
      assert.equal(messagesOf(state.values).length, 2);
      assert.equal(state.checkpoint.thread_id, thread.thread_id);
      assert.deepEqual(state.next, []);

      const own = await call(service, "GET", `/${CHATBOT}/history?thread_id=${thread.thread_id}`);
      assert.equal(own.status, 200);
      assert.equal(((await own.json()) as { total: number }).total, 2);

      const got = await client.threads.get(thread.thread_id);
      assert.equal(got.status, "idle");
      assert.equal(got.metadata?.topic, "greeting");
      assert.equal(got.metadata?.graph_id, CHATBOT);
    });

    test("the older messages mode: metadata once per message, the message as accumulated so far, then each whole message", async () => {
      const thread = await client.threads.create();
      const parts = await collect(client.runs.stream(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "old style" }] }, streamMode: ["messages"] }));
      const names = new Set(parts.map((part) => part.event));
      assert.ok(!names.has("messages"), "no tuples unless messages-tuple is asked for");
      const partials = parts.filter((part) => part.event === "messages/partial").map((part) => (part.data as Message[])[0]!);
      assert.ok(partials.length > 1);
      assert.equal(parts.filter((part) => part.event === "messages/metadata").length, 1);
      const complete = parts.filter((part) => part.event === "messages/complete").flatMap((part) => part.data as Message[]);
      const answer = complete.find((message) => message.type === "ai")!;
      assert.equal(partials.at(-1)!.content, answer.content, "the last partial is the whole answer");
      assert.ok(String(partials[0]!.content).length < String(answer.content).length);
    });

    test("the events mode: LangChain's callback events (the model's tokens among them) beside the other modes, with the public thread id", async () => {
      const thread = await client.threads.create();
      const parts = await collect(
        client.runs.stream(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "as events" }] }, streamMode: ["events", "values"] }),
      );
      const events = parts.filter((part) => part.event === "events").map((part) => part.data as { event: string; name: string; run_id: string; metadata: Record<string, unknown>; data: { chunk?: { content?: unknown } } });
      const kinds = new Set(events.map((event) => event.event));
      for (const kind of ["on_chain_start", "on_chain_end", "on_chat_model_start", "on_chat_model_stream", "on_chat_model_end"]) assert.ok(kinds.has(kind), `${kind} among ${[...kinds].join(", ")}`);
      const tokens = events.filter((event) => event.event === "on_chat_model_stream").map((event) => String(event.data.chunk?.content ?? ""));
      const values = parts.filter((part) => part.event === "values").at(-1)!.data as { messages: Message[] };
      assert.equal(tokens.join(""), values.messages.at(-1)!.content, "the streamed tokens make the answer");
      assert.ok(events.every((event) => typeof event.run_id === "string" && event.name));
      const text = JSON.stringify(events);
      assert.doesNotMatch(text, /lat:v1:/, "no storage key on the wire");
      assert.ok(events.some((event) => event.metadata.thread_id === thread.thread_id));
      assert.ok(!events.some((event) => event.name === "__start__"), "hidden steps stay off the wire");
    });

    test("a conversation started with agenthost's own API is read with threads.getState", async () => {
      const own = await call(service, "POST", `/${CHATBOT}/invoke`, { thread_id: "own-api-thread", input: { message: "from the own API" } });
      assert.equal(own.status, 200);
      const state = await client.threads.getState("own-api-thread");
      const messages = messagesOf(state.values);
      assert.equal(messages.length, 2);
      assert.equal(messages[0]!.content, "from the own API");
    });

    test("a thread id the own API used with two agents is found bound to the one written last, and only by its user", async () => {
      const thread = "own-api-two-agents";
      const own = async (token: string, agent: string) =>
        assert.equal((await call(service, "POST", `/${agent}/invoke`, { thread_id: thread, input: { message: `to ${agent}` } }, token)).status, 200);
      await own("alice-token", CHATBOT);
      await own("alice-token", "create-agent");
      // The backend's one read of both conversations' latest checkpoints: the later write has the larger id.
      const keys = [storageKey("alice", CHATBOT, thread), storageKey("alice", "create-agent", thread), storageKey("alice", "gated-agent", thread)];
      const latest = await service.runtime.checkpoints.latestCheckpoints.latest(keys);
      assert.deepEqual([...latest.keys()].sort(), keys.slice(0, 2).sort());
      for (const key of keys.slice(0, 2)) {
        const head = await service.runtime.checkpoints.saver.getTuple({ configurable: { thread_id: key, checkpoint_ns: "" } });
        assert.equal(latest.get(key), head?.checkpoint.id);
      }
      assert.ok(latest.get(keys[1]!)! > latest.get(keys[0]!)!);

      const alice = new Client({ apiUrl: service.url, apiKey: "alice-token" });
      const bob = new Client({ apiUrl: service.url, apiKey: "bob-token" });
      await assert.rejects(bob.threads.get(thread), (error: unknown) => (error as { status?: number }).status === 404);
      assert.equal((await alice.threads.get(thread)).metadata?.graph_id, "create-agent");
      // Bound to create-agent, the thread refuses a run of another assistant; bob's own is his alone.
      const refused = await call(service, "POST", `/threads/${thread}/runs/wait`, { assistant_id: CHATBOT, input: { messages: [] }, if_not_exists: "create" }, "alice-token");
      assert.equal(refused.status, 409);
      assert.equal(((await refused.json()) as { error_code?: string }).error_code, "thread_agent_mismatch");
      await own("bob-token", CHATBOT);
      assert.equal((await bob.threads.get(thread)).metadata?.graph_id, CHATBOT);
    });

    test("if_not_exists create: a new id gets its record, an existing one is found, one the own API used joins its conversation; never another user's", async () => {
      const wait = (thread: string, assistant: string, text: string, token: string) =>
        call(service, "POST", `/threads/${thread}/runs/wait`, { assistant_id: assistant, input: { messages: [{ role: "user", content: text }] }, if_not_exists: "create", metadata: { from: text } }, token);
      const alice = new Client({ apiUrl: service.url, apiKey: "alice-token" });
      const bob = new Client({ apiUrl: service.url, apiKey: "bob-token" });
      // A new id: recorded, bound to the run's assistant, with the run's metadata; the next run finds it.
      const fresh = `fresh-${randomUUID()}`;
      assert.equal((await wait(fresh, CHATBOT, "one", "alice-token")).status, 200);
      assert.deepEqual((await alice.threads.get(fresh)).metadata, { from: "one", graph_id: CHATBOT, assistant_id: "b417c38e-7e91-5a25-950f-e4fe1e8d5c8f" });
      assert.equal((await wait(fresh, CHATBOT, "two", "alice-token")).status, 200);
      assert.equal(messagesOf((await alice.threads.getState(fresh)).values).length, 4);
      assert.equal((await alice.threads.get(fresh)).metadata?.from, "one", "found, not created again");
      assert.equal((await alice.runs.list(fresh)).length, 2);
      // The same id for bob is bob's own new thread: alice's messages are not his.
      assert.equal((await wait(fresh, CHATBOT, "bob's", "bob-token")).status, 200);
      assert.equal(messagesOf((await bob.threads.getState(fresh)).values).length, 2);
      assert.equal(messagesOf((await alice.threads.getState(fresh)).values).length, 4);
      // An id the own API used, with no record yet: the run continues that conversation.
      const own = `own-${randomUUID()}`;
      assert.equal((await call(service, "POST", `/${CHATBOT}/invoke`, { thread_id: own, input: { message: "from the own API" } }, "alice-token")).status, 200);
      assert.equal((await wait(own, CHATBOT, "then the Platform", "alice-token")).status, 200);
      assert.equal(messagesOf((await alice.threads.getState(own)).values)[0]!.content, "from the own API");
      // One the own API used with another agent is bound to that one: a run of another assistant is refused.
      const other = `other-${randomUUID()}`;
      assert.equal((await call(service, "POST", "/create-agent/invoke", { thread_id: other, input: { message: "to create-agent" } }, "alice-token")).status, 200);
      const refused = await wait(other, CHATBOT, "refused", "alice-token");
      assert.equal(refused.status, 409);
      assert.equal(((await refused.json()) as { error_code?: string }).error_code, "thread_agent_mismatch");
      assert.equal((await alice.threads.get(other)).metadata?.graph_id, "create-agent");
    });

    test("runs.wait answers the final values; history lists the checkpoints; search finds the thread by metadata", async () => {
      const thread = await client.threads.create({ metadata: { purpose: "wait" } });
      const values = await client.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ type: "human", content: "one" }] } });
      assert.equal(messagesOf(values).length, 2);
      await client.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ type: "human", content: "two" }] } });
      const history = await client.threads.getHistory(thread.thread_id, { limit: 50 });
      assert.ok(history.length >= 4, String(history.length));
      assert.equal(messagesOf(history[0]!.values).length, 4, "newest first");
      const found = await client.threads.search({ metadata: { purpose: "wait" } });
      assert.deepEqual(
        found.map((each) => each.thread_id),
        [thread.thread_id],
      );
      const runs = await client.runs.list(thread.thread_id);
      assert.equal(runs.length, 2);
      assert.ok(runs.every((run) => run.status === "success"));
      assert.equal((await client.runs.get(thread.thread_id, runs[0]!.run_id)).run_id, runs[0]!.run_id);
    });

    test("an edit forks the thread from an earlier checkpoint", async () => {
      const thread = await client.threads.create();
      await client.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "first" }] } });
      const afterFirst = await client.threads.getState(thread.thread_id);
      await client.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "second" }] } });
      const forked = await client.runs.wait(thread.thread_id, CHATBOT, {
        input: { messages: [{ role: "user", content: "second, edited" }] },
        checkpointId: afterFirst.checkpoint.checkpoint_id!,
      });
      // The state at that checkpoint, named by its id or by the checkpoint object.
      const byId = await client.threads.getState(thread.thread_id, afterFirst.checkpoint.checkpoint_id!);
      const byObject = await client.threads.getState(thread.thread_id, afterFirst.checkpoint);
      assert.equal(messagesOf(byId.values).length, 2);
      assert.deepEqual(byObject.checkpoint, byId.checkpoint);
      const contents = messagesOf(forked).map((message) => message.content);
      assert.equal(contents.length, 4);
      assert.equal(contents[0], "first");
      assert.equal(contents[2], "second, edited");
    });

    test("an interrupt is streamed in values.__interrupt__, shown in the state's tasks, and answered with a command", async () => {
      const thread = await client.threads.create();
      const parts = await collect(client.runs.stream(thread.thread_id, "ask-name", { input: { messages: [{ role: "user", content: "hi" }] }, streamMode: ["values"] }));
      const lastValues = parts.filter((part) => part.event === "values").at(-1)!.data as { __interrupt__?: Array<{ value: unknown }> };
      assert.equal(lastValues.__interrupt__?.[0]?.value, "What is your name?");
      const paused = await client.threads.get(thread.thread_id);
      assert.equal(paused.status, "interrupted");
      const state = await client.threads.getState(thread.thread_id);
      assert.equal(state.tasks[0]?.interrupts[0]?.value, "What is your name?");
      const resumed = await client.runs.wait(thread.thread_id, "ask-name", { command: { resume: "Ada" } });
      assert.equal(messagesOf(resumed).at(-1)!.content, "Hello, Ada!");
      assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
    });

    test("runs.wait on a run that pauses answers the values it paused with and its __interrupt__", async () => {
      const thread = await client.threads.create();
      const paused = (await client.runs.wait(thread.thread_id, "ask-name", { input: { messages: [{ role: "user", content: "hi there" }] } })) as {
        messages?: Array<{ content: unknown }>;
        __interrupt__?: Array<{ value: unknown }>;
      };
      assert.equal(paused.__interrupt__?.length, 1);
      assert.equal(paused.__interrupt__?.[0]?.value, "What is your name?");
      assert.deepEqual(
        paused.messages?.map((message) => message.content),
        ["hi there"],
      );
      assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");
      const resumed = await client.runs.wait(thread.thread_id, "ask-name", { command: { resume: "Grace" } });
      assert.equal(messagesOf(resumed).at(-1)!.content, "Hello, Grace!");
      assert.equal((resumed as { __interrupt__?: unknown }).__interrupt__, undefined);
    });

    test("a busy thread refuses a second run (409); cancel stops the first, whose stream ends with an error event", async () => {
      const thread = await client.threads.create();
      let runId: string | undefined;
      const first = collect(
        client.runs.stream(thread.thread_id, "gated-agent", {
          input: { messages: [{ role: "user", content: "wait" }] },
          onRunCreated: (meta) => {
            runId = meta.run_id;
          },
        }),
      );
      while (gate.waiting === 0) await new Promise((resolve) => setImmediate(resolve));
      await assert.rejects(client.runs.wait(thread.thread_id, "gated-agent", { input: { messages: [{ role: "user", content: "again" }] } }), (error: unknown) => {
        assert.equal((error as { status?: number }).status, 409);
        return true;
      });
      assert.equal((await client.threads.get(thread.thread_id)).status, "busy");
      assert.ok(runId, "onRunCreated named the run from Content-Location");
      await client.runs.cancel(thread.thread_id, runId!, true);
      const parts = await first;
      const error = parts.find((part) => part.event === "error");
      assert.equal((error?.data as { error?: string } | undefined)?.error, "run_cancelled");
      assert.equal(gate.waiting, 0);
    });

    test("a resumable run is rejoined from its first event (Last-Event-ID -1) and from the middle, with the same ids", async () => {
      const thread = await client.threads.create();
      let runId: string | undefined;
      const parts: Array<StreamPart & { id?: string }> = [];
      for await (const part of client.runs.stream(thread.thread_id, CHATBOT, {
        input: { messages: [{ role: "user", content: "keep my events" }] },
        streamMode: ["values", "messages-tuple"],
        streamResumable: true,
        onRunCreated: (meta) => {
          runId = meta.run_id;
        },
      })) {
        parts.push(part);
      }
      assert.ok(runId);
      const ids = parts.map((part) => part.id);
      assert.ok(ids.every((id) => id !== undefined && /^\d+$/.test(id)), JSON.stringify(ids));
      const replayed: Array<StreamPart & { id?: string }> = [];
      for await (const part of client.runs.joinStream(thread.thread_id, runId!, { lastEventId: "-1" })) replayed.push(part);
      assert.deepEqual(
        replayed.map((part) => [part.event, part.id]),
        parts.map((part) => [part.event, part.id]),
      );
      const middle = parts[2]!.id!;
      const rest: Array<StreamPart & { id?: string }> = [];
      for await (const part of client.runs.joinStream(thread.thread_id, runId!, { lastEventId: middle })) rest.push(part);
      assert.deepEqual(
        rest.map((part) => part.id),
        ids.slice(3),
      );
      // Another user cannot rejoin it.
      const bob = new Client({ apiUrl: service.url, apiKey: "bob-token" });
      await assert.rejects(collect(bob.runs.joinStream(thread.thread_id, runId!, { lastEventId: "-1" })), (error: unknown) => {
        assert.equal((error as { status?: number }).status, 404);
        return true;
      });
    });

    test("a run with on_disconnect continue goes on when its client leaves, and is joined to its end", async () => {
      const thread = await client.threads.create();
      const leave = new AbortController();
      let runId: string | undefined;
      const reading = collect(
        client.runs.stream(thread.thread_id, "gated-agent", {
          input: { messages: [{ role: "user", content: "go on without me" }] },
          onDisconnect: "continue",
          signal: leave.signal,
          onRunCreated: (meta) => {
            runId = meta.run_id;
          },
        }),
      ).catch(() => "left");
      while (gate.waiting === 0) await new Promise((resolve) => setImmediate(resolve));
      leave.abort();
      assert.equal(await reading, "left");
      assert.equal((await client.runs.get(thread.thread_id, runId!)).status, "running");
      gate.open();
      const values = await client.runs.join(thread.thread_id, runId!);
      assert.equal(messagesOf(values).at(-1)!.content, "through the gate");
      assert.equal((await client.runs.get(thread.thread_id, runId!)).status, "success");
    });

    test("each event goes out as the graph makes it: the input's values arrive while the node still works", async () => {
      const thread = await client.threads.create();
      const stream = client.runs.stream(thread.thread_id, "gated-agent", { input: { messages: [{ role: "user", content: "show me now" }] } });
      const iterator = stream[Symbol.asyncIterator]();
      assert.equal((await iterator.next()).value?.event, "metadata");
      const values = (await iterator.next()).value as StreamPart;
      assert.equal(values.event, "values");
      assert.equal(messagesOf(values.data).at(-1)?.content, "show me now");
      // The node has not finished: it is at the gate (or on its way there), and only the test lets it through.
      while (gate.waiting === 0) await new Promise((resolve) => setImmediate(resolve));
      gate.open();
      const rest: StreamPart[] = [];
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value as StreamPart);
      assert.equal(messagesOf(rest.at(-1)!.data).at(-1)?.content, "through the gate");
    });

    test("stateless runs.wait runs on a thread of its own, deleted after", async () => {
      const before = await client.threads.count();
      const values = await client.runs.wait(null, CHATBOT, { input: { messages: [{ role: "user", content: "stateless" }] } });
      assert.equal(messagesOf(values).length, 2);
      assert.equal(await client.threads.count(), before);
    });

    test("one user's threads are invisible to another on every route", async () => {
      const alice = new Client({ apiUrl: service.url, apiKey: "alice-token" });
      const bob = new Client({ apiUrl: service.url, apiKey: "bob-token" });
      const thread = await alice.threads.create({ metadata: { owner: "alice" } });
      await alice.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "secret" }] } });
      const [run] = await alice.runs.list(thread.thread_id);
      const notFound = async (work: Promise<unknown>) =>
        assert.rejects(work, (error: unknown) => {
          assert.equal((error as { status?: number }).status, 404);
          return true;
        });
      await notFound(bob.threads.get(thread.thread_id));
      await notFound(bob.threads.getState(thread.thread_id));
      await notFound(bob.threads.getHistory(thread.thread_id));
      await notFound(bob.threads.update(thread.thread_id, { metadata: { owner: "bob" } }));
      await notFound(bob.threads.delete(thread.thread_id));
      await notFound(bob.runs.list(thread.thread_id));
      await notFound(bob.runs.get(thread.thread_id, run!.run_id));
      await notFound(bob.runs.cancel(thread.thread_id, run!.run_id));
      await notFound(bob.runs.join(thread.thread_id, run!.run_id));
      await notFound(bob.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "intrude" }] } }));
      assert.deepEqual(await bob.threads.search({ metadata: { owner: "alice" } }), []);
      assert.equal(await bob.threads.count({ metadata: { owner: "alice" } }), 0);
      // Bob's own thread of the same id is his own conversation, not Alice's.
      await bob.threads.create({ threadId: thread.thread_id });
      assert.deepEqual(messagesOf((await bob.threads.getState(thread.thread_id)).values), []);
      assert.equal(messagesOf((await alice.threads.getState(thread.thread_id)).values).length, 2);
      // A bad key is refused.
      const stranger = new Client({ apiUrl: service.url, apiKey: "not-a-token" });
      await assert.rejects(stranger.threads.search(), (error: unknown) => {
        assert.equal((error as { status?: number }).status, 401);
        return true;
      });
    });

    test("Platform runs are counted like any run, under their routes' OpenAPI labels", async () => {
      const count = async (name: string, labels: Record<string, string>) => {
        const json = await service.runtime.metrics.registry.getMetricsAsJSON();
        const found = json
          .flatMap((metric) => (metric.values as Array<{ labels: Record<string, string | number>; value: number; metricName?: string }>).map((v) => ({ ...v, name: v.metricName ?? metric.name })))
          .find((v) => v.name === name && Object.entries(labels).every(([key, want]) => String(v.labels[key]) === want));
        return found?.value ?? 0;
      };
      const runsBefore = await count("agenthost_runs_total", { agent: CHATBOT, outcome: "ok" });
      const thread = await client.threads.create();
      await collect(client.runs.stream(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "count me" }] } }));
      await client.runs.wait(thread.thread_id, CHATBOT, { input: { messages: [{ role: "user", content: "and me" }] } });
      assert.equal(await count("agenthost_runs_total", { agent: CHATBOT, outcome: "ok" }), runsBefore + 2);
      assert.ok((await count("agenthost_http_requests_total", { route: "/threads/{thread_id}/runs/stream", method: "POST", status: "200" })) >= 1);
      assert.ok((await count("agenthost_http_requests_total", { route: "/threads/{thread_id}/runs/wait", method: "POST", status: "200" })) >= 1);

    });

    test("hostile input: malformed messages and unknown options are clear 4xx answers", async () => {
      const thread = await client.threads.create();
      const bad = await call(service, "POST", `/threads/${thread.thread_id}/runs/wait`, { assistant_id: CHATBOT, input: { messages: [{ type: "robot", content: "x" }] } });
      assert.equal(bad.status, 422);
      assert.equal(((await bad.json()) as { error_code?: string }).error_code, "validation_failed");
      const enqueue = await call(service, "POST", `/threads/${thread.thread_id}/runs/wait`, { assistant_id: CHATBOT, multitask_strategy: "enqueue", input: null });
      assert.equal(enqueue.status, 422);
      assert.equal(((await enqueue.json()) as { error_code?: string }).error_code, "not_supported");
      const supersteps = await call(service, "POST", "/threads", { supersteps: [{ updates: [{ values: {}, as_node: "x" }] }] });
      assert.equal(supersteps.status, 422);
      const unknown = await call(service, "POST", `/threads/${thread.thread_id}/runs/wait`, { assistant_id: "no-such-agent", input: null });
      assert.equal(unknown.status, 404);
      // Nothing was stored by the refused runs.
      assert.deepEqual(messagesOf((await client.threads.getState(thread.thread_id)).values), []);
    });
  });
}
