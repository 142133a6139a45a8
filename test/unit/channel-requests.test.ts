// ChannelRequests, the one request/reply over a worker's IPC channel: a reply resolves its request;
// a timeout, an abort or the channel closing rejects it; a reply to a request given up goes to
// `late`. Timers run on Node's mock timers.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Channel } from "../../src/coordination/protocol.ts";
import { ChannelClosed, ChannelRequests, ReplyTimeout } from "../../src/coordination/channel-requests.ts";

type Ask = { ah: "ask"; id: number; question: string } | { ah: "note"; text: string };
type Answer = { ah: "answer"; id: number; text: string } | { ah: "other"; id: number };

/** A channel whose sent messages the test reads, and whose incoming messages and close the test makes. */
function fakeChannel() {
  const sent: Ask[] = [];
  const handlers: Array<(message: Answer) => void> = [];
  const closers: Array<() => void> = [];
  let open = true;
  const channel: Channel<Answer, Ask> = {
    send: (message) => {
      if (!open) throw new Error("closed");
      sent.push(message);
    },
    onMessage: (handler) => void handlers.push(handler),
    onClose: (handler) => void closers.push(handler),
  };
  return {
    channel,
    sent,
    deliver: (message: Answer) => handlers.forEach((handler) => handler(message)),
    close: () => {
      open = false;
      closers.forEach((close) => close());
    },
  };
}

const answers = (message: Answer) => (message.ah === "answer" ? message.id : undefined);

test("a reply resolves the request it names; other messages and other ids are not replies", async () => {
  const fake = fakeChannel();
  const requests = new ChannelRequests(fake.channel, answers);
  const first = requests.request((id) => ({ ah: "ask", id, question: "one" }), { timeoutMs: 1_000 });
  const second = requests.request((id) => ({ ah: "ask", id, question: "two" }), { timeoutMs: 1_000 });
  const [a, b] = fake.sent as Array<Extract<Ask, { ah: "ask" }>>;
  assert.notEqual(a!.id, b!.id);
  fake.deliver({ ah: "other", id: b!.id });
  fake.deliver({ ah: "answer", id: b!.id, text: "for two" });
  fake.deliver({ ah: "answer", id: a!.id, text: "for one" });
  assert.deepEqual(await first, { ah: "answer", id: a!.id, text: "for one" });
  assert.deepEqual(await second, { ah: "answer", id: b!.id, text: "for two" });
  assert.equal(requests.send({ ah: "note", text: "no reply" }), true);
});

test("a request given up (timeout, abort) is abandoned first; its late reply goes to `late`", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const fake = fakeChannel();
  const late: Answer[] = [];
  const abandoned: number[] = [];
  const requests = new ChannelRequests(fake.channel, answers, (reply) => late.push(reply));
  const timed = requests.request((id) => ({ ah: "ask", id, question: "slow" }), { timeoutMs: 500, abandon: (id) => abandoned.push(id) });
  t.mock.timers.tick(499);
  assert.equal(abandoned.length, 0, "not yet given up");
  t.mock.timers.tick(1);
  await assert.rejects(timed, ReplyTimeout);
  const stop = new AbortController();
  const aborted = requests.request((id) => ({ ah: "ask", id, question: "stopped" }), {
    timeoutMs: 500,
    signal: stop.signal,
    abandon: (id) => abandoned.push(id),
  });
  const reason = new Error("caller left");
  stop.abort(reason);
  await assert.rejects(aborted, (error) => error === reason);
  const ids = (fake.sent as Array<Extract<Ask, { ah: "ask" }>>).map((message) => message.id);
  assert.deepEqual(abandoned, ids);
  fake.deliver({ ah: "answer", id: ids[0]!, text: "too late" });
  assert.deepEqual(late, [{ ah: "answer", id: ids[0]!, text: "too late" }]);
  await assert.rejects(
    requests.request((id) => ({ ah: "ask", id, question: "x" }), { timeoutMs: 500, signal: stop.signal }),
    (error) => error === reason,
    "an aborted signal refuses at once",
  );
  assert.equal(fake.sent.length, 2, "and sends nothing");
});

test("the channel closing fails what waits and every later request; a failed send fails its request", async () => {
  const fake = fakeChannel();
  const requests = new ChannelRequests(fake.channel, answers);
  const waiting = requests.request((id) => ({ ah: "ask", id, question: "q" }), { timeoutMs: 60_000 });
  assert.equal(requests.closed, false);
  fake.close();
  await assert.rejects(waiting, ChannelClosed);
  assert.equal(requests.closed, true);
  await assert.rejects(requests.request((id) => ({ ah: "ask", id, question: "q" }), { timeoutMs: 60_000 }), ChannelClosed);
  assert.equal(requests.send({ ah: "note", text: "lost" }), false);

  const broken = fakeChannel();
  const sendFails = new ChannelRequests(broken.channel, answers);
  broken.sent.push = () => {
    throw new Error("EPIPE");
  };
  await assert.rejects(sendFails.request((id) => ({ ah: "ask", id, question: "q" }), { timeoutMs: 60_000 }), ChannelClosed);
});

test("a follow-up waits under the id it names", async () => {
  const fake = fakeChannel();
  const requests = new ChannelRequests(fake.channel, answers);
  const first = requests.request((id) => ({ ah: "ask", id, question: "take" }), { timeoutMs: 1_000 });
  const { id } = fake.sent[0] as Extract<Ask, { ah: "ask" }>;
  fake.deliver({ ah: "answer", id, text: "taken" });
  await first;
  const followUp = requests.request((given) => ({ ah: "ask", id: given, question: "give back" }), { timeoutMs: 1_000, id });
  assert.equal((fake.sent[1] as Extract<Ask, { ah: "ask" }>).id, id);
  fake.deliver({ ah: "answer", id, text: "given back" });
  assert.equal(((await followUp) as Extract<Answer, { ah: "answer" }>).text, "given back");
});
