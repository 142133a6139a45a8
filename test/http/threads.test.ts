// The conversation list (GET /{agent_id}/threads) through real HTTP, on the memory, SQLite and
// PostgreSQL backends: order, titles, counts, paging (offsets and cursors), identity, clearing, bad queries.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { waitFor } from "../helpers/raw-http.ts";
import { call, startService, type RunningService } from "../helpers/service.ts";
import { ALL_BACKENDS } from "./history-backends.ts";

const AGENT = "chatbot-agent";
const ALICE_TOKEN = "alice-individual-token";

interface Listed {
  thread_id: string;
  title: string | null;
  created_at: string;
  updated_at: string;
  message_count: number;
}
type ThreadPage = { threads: Listed[]; total: number; next_offset: number | null; next_cursor: string | null };

async function list(service: RunningService, query = "", token?: string, path = `/${AGENT}/threads`): Promise<ThreadPage> {
  const res = await call(service, "GET", `${path}${query ? `?${query}` : ""}`, undefined, token);
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as ThreadPage;
}

async function invoke(service: RunningService, body: Record<string, unknown>, token?: string): Promise<Record<string, unknown>> {
  const res = await call(service, "POST", `/${AGENT}/invoke`, body, token);
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as Record<string, unknown>;
}

/**
 * Times are kept in milliseconds: before a write whose order the test asserts, let the clock pass the
 * previous write's millisecond (one request takes longer than that; this only rules out a tie).
 */
async function clockTick(): Promise<void> {
  const start = Date.now();
  await waitFor(() => Date.now() > start, "the next millisecond");
}

const LONG = `${"Plan a three-day walking tour of Lisbon ".repeat(4)}with   lots\nof whitespace`;

/** Every page of a list by cursor, from the first: the thread ids in order, and each page's next_offset. */
async function byCursor(service: RunningService, query: string, token?: string): Promise<{ ids: string[]; nextOffsets: Array<number | null>; pages: number }> {
  const ids: string[] = [];
  const nextOffsets: Array<number | null> = [];
  let cursor: string | null = "";
  let pages = 0;
  while (cursor !== null) {
    const page: ThreadPage = await list(service, `${query}${cursor ? `&cursor=${cursor}` : ""}`, token);
    ids.push(...page.threads.map((t) => t.thread_id));
    nextOffsets.push(page.next_offset);
    cursor = page.next_cursor;
    pages++;
  }
  return { ids, nextOffsets, pages };
}

/** A cursor made by hand, as the service encodes one. */
const handMade = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

for (const makeBackend of ALL_BACKENDS) {
  const backend = makeBackend();
  describe(`thread list on ${backend.name}`, () => {
    let service: RunningService;
    before(async () => {
      service = await startService({ ...backend.env, AUTH_USERS: JSON.stringify({ alice: ALICE_TOKEN }) });
    });
    after(async () => {
      await service.close();
      await backend.cleanup();
    });

    test("lists the caller's conversations newest first, with title, count and times", async () => {
      const user = `u-order-${backend.name}`;
      const created = await invoke(service, { input: { message: LONG }, user_id: user });
      const newThread = created.thread_id as string;
      await clockTick();
      await invoke(service, { input: { message: "second conversation" }, thread_id: "t-second", user_id: user });
      await clockTick();
      const appended = await call(service, "POST", `/${AGENT}/history/add_messages`, {
        thread_id: "t-third",
        user_id: user,
        messages: [
          { type: "ai", content: "an AI greeting first" },
          { type: "human", content: [{ type: "text", text: "blocks" }, { type: "text", text: "of text" }] },
          { type: "ai", content: "reply" },
        ],
      });
      assert.equal(appended.status, 201);

      let page = await list(service, `user_id=${user}`);
      assert.equal(page.total, 3);
      assert.equal(page.next_offset, null);
      assert.deepEqual(page.threads.map((t) => t.thread_id), ["t-third", "t-second", newThread]);
      const [third, second, first] = page.threads as [Listed, Listed, Listed];
      assert.equal(third.title, "blocks of text");
      assert.equal(third.message_count, 3);
      assert.equal(second.title, "second conversation");
      assert.equal(second.message_count, 2);
      assert.equal(Array.from(first.title!).length, 80);
      assert.ok(LONG.replace(/\s+/g, " ").startsWith(first.title!));
      assert.equal(first.message_count, 2);
      for (const t of page.threads) {
        assert.ok(!Number.isNaN(Date.parse(t.created_at)) && t.created_at <= t.updated_at, JSON.stringify(t));
      }

      // A new turn on the oldest conversation moves it to the top; its title and creation stay.
      await clockTick();
      await invoke(service, { input: { message: "and one more thing" }, thread_id: newThread, user_id: user });
      page = await list(service, `user_id=${user}`);
      assert.deepEqual(page.threads.map((t) => t.thread_id), [newThread, "t-third", "t-second"]);
      assert.equal(page.threads[0]!.message_count, 4);
      assert.equal(page.threads[0]!.title, first.title);
      assert.equal(page.threads[0]!.created_at, first.created_at);
      assert.ok(page.threads[0]!.updated_at > first.updated_at);
    });

    test("pages with limit and offset; next_offset is null on the last page", async () => {
      const user = `u-paging-${backend.name}`;
      for (const id of ["p1", "p2", "p3", "p4", "p5"]) {
        await clockTick();
        await invoke(service, { input: { message: id }, thread_id: id, user_id: user });
      }
      const seen: string[] = [];
      const offsets: Array<number | null> = [];
      let offset: number | null = 0;
      while (offset !== null) {
        const page: ThreadPage = await list(service, `user_id=${user}&limit=2&offset=${offset}`);
        assert.equal(page.total, 5);
        seen.push(...page.threads.map((t) => t.thread_id));
        offsets.push(page.next_offset);
        offset = page.next_offset;
      }
      assert.deepEqual(offsets, [2, 4, null]);
      assert.deepEqual(seen, ["p5", "p4", "p3", "p2", "p1"]);
      assert.equal((await list(service, `user_id=${user}`)).threads.length, 5, "default limit 20 holds all five");

      // The same list by cursor: the same order, next_cursor null on the last page, no next_offset after the first.
      const paged = await byCursor(service, `user_id=${user}&limit=2`);
      assert.deepEqual(paged.ids, seen);
      assert.deepEqual(paged.nextOffsets, [2, null, null]);
      const whole = await list(service, `user_id=${user}&limit=5`);
      assert.equal(whole.next_cursor, null);
      assert.equal(whole.next_offset, null);
      // An offset page's cursor continues where that page ended.
      const second = await list(service, `user_id=${user}&limit=2&offset=2`);
      assert.deepEqual(second.threads.map((t) => t.thread_id), ["p3", "p2"]);
      assert.deepEqual((await list(service, `user_id=${user}&limit=2&cursor=${second.next_cursor}`)).threads.map((t) => t.thread_id), ["p1"]);
    });

    test("cursor pages hold conversations updated in the same millisecond once each, in thread id order", async () => {
      const user = `u-ties-${backend.name}`;
      const now = Date.now();
      // Stored as the message store lists them; five share one millisecond, one is older.
      for (const id of ["t-c", "t-a", "t-e", "t-b", "t-d"]) {
        await service.runtime.checkpoints.threads.touch(`key-${user}-${id}`, { userId: user, agentId: AGENT, threadId: id }, { messageCount: 1, title: id }, now);
      }
      await service.runtime.checkpoints.threads.touch(`key-${user}-old`, { userId: user, agentId: AGENT, threadId: "t-old" }, { messageCount: 1, title: "old" }, now - 1);
      for (const limit of [1, 2, 4]) {
        const paged = await byCursor(service, `user_id=${user}&limit=${limit}`);
        assert.deepEqual(paged.ids, ["t-a", "t-b", "t-c", "t-d", "t-e", "t-old"], `limit ${limit}`);
        assert.equal(paged.pages, Math.ceil(6 / limit));
      }
    });

    test("only the caller's conversations with that agent; token users see only their own", async () => {
      await invoke(service, { input: { message: "alice's own" }, thread_id: "shared-id" }, ALICE_TOKEN);
      await invoke(service, { input: { message: "bob's" }, thread_id: "shared-id", user_id: "bob" });
      await call(service, "POST", "/create-agent/history/add_messages", { thread_id: "other-agent", user_id: "alice", messages: [{ type: "human", content: "hi" }] });

      const alice = await list(service, "", ALICE_TOKEN);
      assert.deepEqual(alice.threads.map((t) => [t.thread_id, t.title]), [["shared-id", "alice's own"]]);
      const asTrusted = await list(service, "user_id=alice");
      assert.deepEqual(asTrusted.threads.map((t) => t.title), ["alice's own"]);
      const bob = await list(service, "user_id=bob");
      assert.deepEqual(bob.threads.map((t) => t.title), ["bob's"]);
      const otherAgent = await list(service, "user_id=alice", undefined, "/create-agent/threads");
      assert.deepEqual(otherAgent.threads.map((t) => t.thread_id), ["other-agent"]);

      const refused = await call(service, "GET", `/${AGENT}/threads?user_id=bob`, undefined, ALICE_TOKEN);
      assert.equal(refused.status, 403);
      assert.equal(((await refused.json()) as { error_code: string }).error_code, "forbidden_user");
    });

    test("a cursor only says where to start in the caller's own list", async () => {
      for (const id of ["c1", "c2", "c3"]) {
        await clockTick();
        await invoke(service, { input: { message: `alice ${id}` }, thread_id: `cur-${id}` }, ALICE_TOKEN);
        await invoke(service, { input: { message: `bob ${id}` }, thread_id: `cur-${id}`, user_id: "cursor-bob" });
      }
      const alicePage = await list(service, "limit=1", ALICE_TOKEN);
      assert.deepEqual(alicePage.threads.map((t) => t.title), ["alice c3"]);
      // Bob with Alice's cursor: Bob's own conversations after that place, none of Alice's.
      const bob = await list(service, `user_id=cursor-bob&cursor=${alicePage.next_cursor}`);
      assert.ok(bob.threads.length > 0 && bob.threads.every((t) => t.title?.startsWith("bob ")), JSON.stringify(bob.threads));
      assert.equal(bob.total, 3);
      // A cursor naming a thread id and time of its own making positions Alice's list and shows nothing else.
      const far = await list(service, `cursor=${handMade([Date.now() + 60_000, "zzz"])}`, ALICE_TOKEN);
      assert.deepEqual(far.threads, (await list(service, "", ALICE_TOKEN)).threads);
      // A cursor does not widen what a token user may name.
      const refused = await call(service, "GET", `/${AGENT}/threads?user_id=cursor-bob&cursor=${alicePage.next_cursor}`, undefined, ALICE_TOKEN);
      assert.equal(refused.status, 403);
    });

    test("the default agent's alias lists the same; the service user is the default", async () => {
      await invoke(service, { input: { message: "as the service user" }, thread_id: "svc-thread" });
      const named = await list(service);
      const alias = await list(service, "", undefined, "/threads");
      assert.deepEqual(alias, named);
      assert.ok(named.threads.some((t) => t.thread_id === "svc-thread"));
    });

    test("a cleared conversation disappears", async () => {
      const user = `u-clear-${backend.name}`;
      await invoke(service, { input: { message: "keep" }, thread_id: "keep", user_id: user });
      await invoke(service, { input: { message: "drop" }, thread_id: "drop", user_id: user });
      assert.equal((await list(service, `user_id=${user}`)).total, 2);
      const cleared = await call(service, "DELETE", `/${AGENT}/history/clear`, { thread_id: "drop", user_id: user });
      assert.equal(cleared.status, 200);
      const page = await list(service, `user_id=${user}`);
      assert.deepEqual(page.threads.map((t) => t.thread_id), ["keep"]);
      assert.equal(page.total, 1);
      // Used again, it comes back as a new conversation.
      await invoke(service, { input: { message: "drop again" }, thread_id: "drop", user_id: user });
      const again = await list(service, `user_id=${user}`);
      assert.deepEqual(again.threads.map((t) => [t.thread_id, t.title, t.message_count]), [["drop", "drop again", 2], ["keep", "keep", 2]]);
    });

    test("limit outside 1..100, a bad offset and a bad cursor are refused with 422", async () => {
      const cursor = handMade([Date.now(), "t"]);
      for (const query of [
        "limit=0",
        "limit=101",
        "limit=abc",
        "offset=-1",
        "cursor=%25%25",
        "cursor=abc",
        `cursor=${handMade([1])}`,
        `cursor=${handMade([-1, "t"])}`,
        `cursor=${handMade([1.5, "t"])}`,
        `cursor=${handMade([1, ""])}`,
        `cursor=${handMade([1, "x".repeat(257)])}`,
        `cursor=${"A".repeat(2_101)}`,
        `cursor=${cursor}&cursor=${cursor}`,
        `offset=0&cursor=${cursor}`,
      ]) {
        const res = await call(service, "GET", `/${AGENT}/threads?${query}`);
        assert.equal(res.status, 422, query);
        const body = (await res.json()) as { error_code: string; detail: string };
        assert.equal(body.error_code, "validation_failed");
        assert.ok(body.detail.length > 0);
        if (query.includes("cursor")) assert.match(body.detail, /cursor/, query);
      }
      assert.equal((await call(service, "GET", `/${AGENT}/threads?limit=100`)).status, 200);
      assert.equal((await call(service, "GET", `/${AGENT}/threads?cursor=${cursor}`)).status, 200);
      assert.equal((await call(service, "GET", `/${AGENT}/threads?cursor=`)).status, 200, "an empty cursor counts as none");
    });
  });
}
