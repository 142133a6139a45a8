import assert from "node:assert/strict";
import { test } from "node:test";
import { ServiceError } from "../../src/errors/service-error.ts";
import { decisionFromText, interruptMessage, resumeValuesFromInput } from "../../src/runs/interrupts.ts";

/** How an ordinary run's input answers pending interrupts (the original service's resume-by-message rules). */

const approval = (...names: string[]) => ({
  actionRequests: names.map((name) => ({ name, args: {} })),
  reviewConfigs: names.map((name) => ({ actionName: name, allowedDecisions: ["approve", "edit", "reject"] })),
});

test("approving words approve; rejecting words or text starting with reject reject, with the reason after ':'", () => {
  for (const word of ["approve", "Yes", " y ", "OK", "accept", "APPROVED"]) assert.deepEqual(decisionFromText(word), { type: "approve" }, word);
  for (const word of ["reject", "No", "n", "deny", "rejected", "Rejecting this"]) {
    assert.deepEqual(decisionFromText(word), { type: "reject", message: "User rejected the action." }, word);
  }
  assert.deepEqual(decisionFromText("reject: too risky"), { type: "reject", message: "too risky" });
  assert.deepEqual(decisionFromText("No: not now"), { type: "reject", message: "not now" });
  assert.deepEqual(decisionFromText("Use /tmp/notes.md instead"), { type: "reject", message: "Use /tmp/notes.md instead" }, "anything else answers in the tool's place");
});

test("an approval gets one decision per requested action; a decision the review config does not allow is 422", () => {
  const values = resumeValuesFromInput([{ id: "a", value: approval("write_file", "edit_file") }], { message: "yes" });
  assert.deepEqual(values, { a: { decisions: [{ type: "approve" }, { type: "approve" }] } });
  const strict = { actionRequests: [{ name: "write_file" }], reviewConfigs: [{ actionName: "write_file", allowedDecisions: ["approve"] }] };
  assert.throws(
    () => resumeValuesFromInput([{ id: "a", value: strict }], { message: "no" }),
    (error: unknown) => error instanceof ServiceError && error.kind === "validation_failed" && /allows approve/.test(error.detail ?? ""),
  );
  const blocks = resumeValuesFromInput([{ id: "a", value: approval("ls") }], { message: [{ type: "text", text: "approve" }] });
  assert.deepEqual(blocks, { a: { decisions: [{ type: "approve" }] } }, "content blocks are read as their text");
});

test("a plain interrupt receives the whole input; one pending takes input.responses; input.resume answers the ids it names", () => {
  assert.deepEqual(resumeValuesFromInput([{ id: "q", value: "Name?" }], { message: "Bob" }), { q: { message: "Bob" } });
  assert.deepEqual(resumeValuesFromInput([{ id: "q", value: { question: "?" } }], { message: "", responses: { accept: true } }), { q: { accept: true } });
  const two = [
    { id: "q1", value: "One?" },
    { id: "q2", value: "Two?" },
  ];
  assert.deepEqual(resumeValuesFromInput(two, { message: "", resume: { q2: "second" } }), { q2: "second" });
  assert.deepEqual(resumeValuesFromInput(two, { message: "both" }), { q1: { message: "both" }, q2: { message: "both" } });
  assert.deepEqual(
    resumeValuesFromInput(two, { message: "", responses: 1, resume: { other: 1 } }),
    { q1: { message: "", responses: 1, resume: { other: 1 } }, q2: { message: "", responses: 1, resume: { other: 1 } } },
    "responses is for a single pending interrupt; a resume map naming nothing pending answers nothing by id",
  );
});

test("a paused run's message: type ai, the texts joined by a blank line, custom_data.interrupts", () => {
  const message = interruptMessage(
    [
      { id: "a", value: "What is your name?" },
      { id: "b", value: approval("write_file") },
      { id: "c", value: { question: "Colour?" } },
      { id: "d", value: 42 },
    ],
    { threadId: "t", runId: "r" },
  );
  assert.equal(message.type, "ai");
  assert.equal(message.content, "What is your name?\n\nApproval needed before running write_file.\n\nColour?\n\nThe agent is waiting for input.");
  assert.deepEqual((message.custom_data?.interrupts as Array<{ id: string }>).map((i) => i.id), ["a", "b", "c", "d"]);
  assert.deepEqual(message.tool_calls, []);
});
