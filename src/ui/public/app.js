/* global document, window, history, location, IntersectionObserver */
// The chat page's browser code: no framework, no build. It talks only to the page's own server
// (/api/...), which holds the agenthost token and user id; nothing secret reaches this script.
import { MarkdownStream, renderMarkdown } from "/markdown.js";

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const els = {
  agent: /** @type {HTMLSelectElement} */ ($("agent")),
  description: $("agent-description"),
  error: $("error"),
  messages: $("messages"),
  composer: /** @type {HTMLFormElement} */ ($("composer")),
  input: /** @type {HTMLTextAreaElement} */ ($("input")),
  send: /** @type {HTMLButtonElement} */ ($("send")),
  newChat: /** @type {HTMLButtonElement} */ ($("new-chat")),
  stop: /** @type {HTMLButtonElement} */ ($("stop")),
  retry: /** @type {HTMLButtonElement} */ ($("retry")),
  older: /** @type {HTMLButtonElement} */ ($("older")),
  threadList: $("thread-list"),
  moreThreads: /** @type {HTMLButtonElement} */ ($("more-threads")),
  threadsEmpty: $("threads-empty"),
  deleteChat: /** @type {HTMLButtonElement} */ ($("delete-chat")),
  confirmDelete: /** @type {HTMLDialogElement} */ ($("confirm-delete")),
  toggleSidebar: /** @type {HTMLButtonElement} */ ($("toggle-sidebar")),
  attach: /** @type {HTMLButtonElement} */ ($("attach")),
  file: /** @type {HTMLInputElement} */ ($("file")),
  attachments: $("attachments"),
};

const state = {
  agents: [],
  agent: "",
  threadId: /** @type {string | null} */ (null),
  /** The stream being read: its AbortController (aborting stops reading, not the run). */
  running: /** @type {AbortController | null} */ (null),
  /** Where the page of history before the shown ones ends; null when the start is shown. */
  older: /** @type {number | null} */ (null),
  threads: [],
  threadsNext: /** @type {number | null} */ (null),
  /** The conversation started by the answer streaming now, until it ends (the service may not list it yet). */
  started: /** @type {{ thread_id: string, title: string, updated_at: string } | null} */ (null),
  /** What to do on Retry. */
  retry: /** @type {(() => void) | null} */ (null),
  retryTimer: 0,
  /** Counts page loads of a conversation, so a slow answer for an older one is dropped. */
  generation: 0,
  /** What the page server lets one message carry. */
  limits: { max_attachments: 10, max_upload_bytes: 10 * 1024 * 1024 },
  /** Files chosen for the next message: content blocks, with their size. */
  attachments: /** @type {{ type: string, base64: string, mime_type: string, filename: string, size: number }[]} */ ([]),
};

const INPUT_PLACEHOLDER = els.input.placeholder;

/** The longest message the page's server accepts (characters, after trimming). */
const MAX_MESSAGE_CHARS = 100_000;

// ---- rendering -------------------------------------------------------------------------------

function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => (block && block.type === "text" ? block.text : block && block.type ? `[${block.type}]` : ""))
    .join("\n");
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function toolCallsView(calls) {
  return calls.map((call) => {
    const details = element("details", "tool");
    if (typeof call.id === "string") details.dataset.callId = call.id;
    details.append(element("summary", "", `Tool call: ${call.name ?? "tool"}`));
    details.append(element("pre", "", JSON.stringify(call.args ?? {}, null, 2)));
    return details;
  });
}

// A plain up-pointing arrow (a triangle on a short stem), drawn here as SVG so the buttons do not depend
// on an emoji font being installed; the down button is the same shape rotated.
const THUMB = "M12 3 L21 13 H15.5 V21 H8.5 V13 H3 Z";

function thumbButton(className, label, down) {
  const button = element("button", className);
  button.type = "button";
  button.title = label;
  button.setAttribute("aria-label", label);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  if (down) svg.setAttribute("transform", "rotate(180)");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", THUMB);
  svg.append(path);
  button.append(svg);
  return button;
}

function feedbackView(runId) {
  const box = element("div", "feedback");
  const up = thumbButton("feedback-up", "Good answer", false);
  const down = thumbButton("feedback-down", "Bad answer", true);
  const note = element("span", "feedback-note");
  const give = async (score, chosen) => {
    up.disabled = down.disabled = true;
    try {
      const answer = await api("/api/feedback", { agent: state.agent, run_id: runId, score });
      if (answer.delivery === "skipped") {
        // agenthost acknowledged the rating but keeps it nowhere (no feedback destination): say so
        // rather than thank. The buttons stay off: another click would go nowhere too.
        box.dataset.delivery = "skipped";
        note.textContent = "Not recorded: this server does not record feedback.";
        up.title = down.title = "This server does not record feedback";
        return;
      }
      chosen.classList.add("chosen");
      note.textContent = "Thanks for the feedback.";
      box.dataset.sent = String(score);
    } catch (error) {
      up.disabled = down.disabled = false;
      showError(error);
    }
  };
  up.addEventListener("click", () => give(1, up));
  down.addEventListener("click", () => give(0, down));
  box.append(up, down, note);
  return box;
}

/** A media block as the page shows it: an image from its bytes, else a chip with its name. */
function mediaView(block) {
  const bytes = block.base64 ?? block.data;
  if (block.type === "image" && typeof bytes === "string" && /^image\//.test(block.mime_type ?? "")) {
    const image = /** @type {HTMLImageElement} */ (element("img"));
    image.src = `data:${block.mime_type};base64,${bytes}`;
    image.alt = block.filename ?? "image";
    return image;
  }
  return element("span", "attachment", `${block.type === "image" ? "Image" : "File"}: ${block.filename ?? block.mime_type ?? block.url ?? block.type}`);
}

function humanView(content) {
  const bubble = element("div", "msg human");
  if (!Array.isArray(content)) {
    bubble.textContent = typeof content === "string" ? content : "";
    return bubble;
  }
  for (const block of content) {
    if (block?.type === "text") bubble.append(element("div", "text", block.text ?? ""));
    else if (block && typeof block === "object") bubble.append(mediaView(block));
  }
  return bubble;
}

// ---- attachments -----------------------------------------------------------------------------

function formatBytes(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}

function readBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(reader.error ?? new Error(`${file.name} cannot be read.`));
    reader.readAsDataURL(file);
  });
}

/** Add files (picker, drop, paste) to the next message, within the page server's limits. */
async function addFiles(files) {
  const { max_attachments: most, max_upload_bytes: bytes } = state.limits;
  for (const file of files) {
    if (state.attachments.length >= most) {
      showError(new Error(`At most ${most} attachment${most === 1 ? "" : "s"} per message; ${file.name} was not added.`));
      break;
    }
    const used = state.attachments.reduce((sum, a) => sum + a.size, 0);
    if (used + file.size > bytes) {
      showError(new Error(`${file.name} (${formatBytes(file.size)}) is too large: the attachments of one message may hold ${formatBytes(bytes)} together.`));
      continue;
    }
    const mime = file.type || "application/octet-stream";
    try {
      const base64 = await readBase64(file);
      state.attachments.push({ type: mime.startsWith("image/") ? "image" : "file", base64, mime_type: mime, filename: file.name || "attachment", size: file.size });
    } catch (error) {
      showError(error);
    }
  }
  showAttachments();
}

function showAttachments() {
  els.attachments.replaceChildren(...state.attachments.map((item, index) => {
    const chip = element("span", "attachment");
    chip.append(item.type === "image" ? mediaView(item) : element("span", "kind", "File:"));
    chip.append(element("span", "name", item.filename));
    const remove = element("button", "remove", "×");
    remove.type = "button";
    remove.setAttribute("aria-label", `Remove ${item.filename}`);
    remove.addEventListener("click", () => {
      state.attachments.splice(index, 1);
      showAttachments();
    });
    chip.append(remove);
    return chip;
  }));
  els.attachments.hidden = state.attachments.length === 0;
}

function bindAttachments() {
  els.attach.addEventListener("click", () => els.file.click());
  els.file.addEventListener("change", () => {
    void addFiles([...(els.file.files ?? [])]).then(() => (els.file.value = ""));
  });
  const hasFiles = (event) => [...(event.dataTransfer?.types ?? [])].includes("Files");
  document.addEventListener("dragover", (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    document.body.classList.add("dragging");
  });
  document.addEventListener("dragleave", (event) => {
    if (event.relatedTarget === null) document.body.classList.remove("dragging");
  });
  document.addEventListener("drop", (event) => {
    document.body.classList.remove("dragging");
    if (!hasFiles(event)) return;
    event.preventDefault();
    void addFiles([...(event.dataTransfer?.files ?? [])]);
  });
  els.input.addEventListener("paste", (event) => {
    const files = [...(event.clipboardData?.files ?? [])];
    if (files.length === 0) return;
    event.preventDefault();
    void addFiles(files);
  });
}

/** The question one pending interrupt asks, as text. */
function interruptText(value) {
  if (typeof value === "string") return value;
  for (const key of ["question", "message", "text", "prompt", "description"]) {
    if (value && typeof value[key] === "string") return value[key];
  }
  return "The agent is waiting for input.";
}

/**
 * What a paused run asks: each tool approval (tool and arguments) with Approve and Reject (with a
 * reason), sent as the conversation's next message, which the service reads as the decision
 * ("approve", "reject: why"); or each question with its own answer box, sent keyed by its interrupt
 * id (`resume`), so the service gives that text to that question alone. A run that still waits on
 * other questions pauses again and shows them in a new card (with what was typed for them here).
 */
function interruptView(interrupts) {
  const card = element("div", "interrupt");
  const controls = [];
  const close = () => {
    for (const control of controls) control.disabled = true;
    card.dataset.answered = "true";
  };
  const approvals = interrupts.flatMap((item) => item?.value?.actionRequests ?? []);
  if (approvals.length > 0) {
    const answer = (text, shown) => {
      close();
      card.append(element("p", "interrupt-answered", shown));
      void send(text, { echo: false });
    };
    card.append(element("p", "interrupt-title", approvals.length === 1 ? "Approval needed" : `${approvals.length} approvals needed`));
    for (const action of approvals) {
      const box = element("div", "approval");
      box.append(element("div", "approval-tool", `Tool: ${action.name ?? "tool"}`));
      box.append(element("pre", "approval-args", JSON.stringify(action.args ?? {}, null, 2)));
      card.append(box);
    }
    const approve = element("button", "approve", "Approve");
    const reason = /** @type {HTMLInputElement} */ (element("input", "reject-reason"));
    reason.placeholder = "Reason (optional)";
    reason.setAttribute("aria-label", "Reason for rejecting");
    const reject = element("button", "reject", "Reject");
    approve.type = reject.type = "button";
    approve.addEventListener("click", () => answer("approve", "Approved"));
    reject.addEventListener("click", () => {
      const why = reason.value.trim();
      answer(why ? `reject: ${why}` : "reject", why ? `Rejected: ${why}` : "Rejected");
    });
    const row = element("div", "interrupt-controls");
    row.append(approve, reason, reject);
    controls.push(approve, reason, reject);
    card.append(row);
    return card;
  }
  for (const item of interrupts) {
    const id = typeof item?.id === "string" ? item.id : "";
    const question = interruptText(item?.value);
    const box = element("div", "question");
    box.dataset.interruptId = id;
    box.append(element("p", "interrupt-question", question));
    const input = /** @type {HTMLInputElement} */ (element("input", "interrupt-answer"));
    input.placeholder = "Your answer";
    input.setAttribute("aria-label", `Your answer: ${question}`);
    // Asked again after another question was answered: keep what was typed for it.
    input.value = draftFor(id);
    const submit = element("button", "answer", "Answer");
    submit.type = "button";
    const go = () => {
      const text = input.value.trim();
      if (!text || !id || input.disabled) return;
      // The card is done: what the run still waits for comes back in the card of its next pause.
      close();
      box.dataset.answered = "true";
      box.append(element("p", "interrupt-answered", `Answered: ${text}`));
      void send(text, { echo: false, resume: { [id]: text } });
    };
    submit.addEventListener("click", go);
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") go();
    });
    const row = element("div", "interrupt-controls");
    row.append(input, submit);
    controls.push(input, submit);
    box.append(row);
    card.append(box);
  }
  return card;
}

/** What was typed, and not sent, for a question in an earlier card of the same pending interrupt. */
function draftFor(id) {
  if (!id) return "";
  const boxes = [...els.messages.querySelectorAll(".question")].filter(
    (box) => /** @type {HTMLElement} */ (box).dataset.interruptId === id && /** @type {HTMLElement} */ (box).dataset.answered !== "true",
  );
  const input = /** @type {HTMLInputElement | null | undefined} */ (boxes.at(-1)?.querySelector(".interrupt-answer"));
  return input?.value.trim() ?? "";
}

/** One message as nodes: collapsed tool calls and results, a Markdown answer with feedback. */
function messageView(message) {
  const nodes = [];
  if (message.type === "human") {
    nodes.push(humanView(message.content));
    return nodes;
  }
  if (message.type === "tool") {
    const details = element("details", "tool");
    details.append(element("summary", "", `Tool result${message.name ? `: ${message.name}` : ""}`));
    details.append(element("pre", "", textOf(message.content)));
    nodes.push(details);
    return nodes;
  }
  if (Array.isArray(message.interrupts) && message.interrupts.length > 0) {
    nodes.push(interruptView(message.interrupts));
    return nodes;
  }
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  nodes.push(...toolCallsView(calls));
  const text = textOf(message.content);
  if (text.trim() !== "") {
    const bubble = element("div", `msg ${message.type === "ai" ? "ai" : "other"}`);
    bubble.append(...renderMarkdown(text));
    answerTexts.set(bubble, text);
    if (message.type === "ai" && calls.length === 0 && message.run_id) bubble.append(feedbackView(message.run_id));
    nodes.push(bubble);
  }
  return nodes;
}

/** The text each answer bubble shows, by bubble. */
const answerTexts = new WeakMap();

/**
 * An answer a resumed run repeats: when questions asked in one step are answered one at a time, each
 * resume reports again the answers of the questions answered before it (already shown since the
 * turn's first card).
 */
function answeredBefore(message) {
  const text = textOf(message.content);
  const nodes = [...els.messages.children];
  const turn = nodes.findLastIndex((node) => node.classList.contains("human"));
  const firstCard = nodes.findIndex((node, index) => index > turn && node.classList.contains("interrupt"));
  return firstCard >= 0 && nodes.slice(firstCard).some((node) => answerTexts.get(node) === text);
}

/** A tool-call message whose calls are all on the page already. */
function alreadyShown(message) {
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  if (calls.length === 0 || textOf(message.content).trim() !== "") return false;
  const shown = new Set([...els.messages.querySelectorAll("details.tool[data-call-id]")].map((node) => /** @type {HTMLElement} */ (node).dataset.callId));
  return calls.every((call) => shown.has(call.id));
}

/** Only the last paused-run card of a conversation (`last`, when it is one) can still be answered. */
function disableOldInterrupts(last = els.messages.lastElementChild) {
  const cards = [...els.messages.querySelectorAll(".interrupt")];
  for (const card of cards) {
    if (card === last) continue;
    card.dataset.answered = "true";
    for (const control of card.querySelectorAll("button, input")) /** @type {HTMLInputElement} */ (control).disabled = true;
  }
}

function scrollDown() {
  window.scrollTo({ top: document.body.scrollHeight });
}

// ---- errors ----------------------------------------------------------------------------------

/** A failure as the page's server reports it: `{ message, kind, status, error_code, retry_after }`. */
class PageError extends Error {
  constructor(info) {
    super(info.message);
    this.info = info;
  }
}

/**
 * The failure behind `error`. Errors the page makes itself (a file too large, a message too long)
 * are of kind "page": their message is already written for the user.
 */
function infoOf(error) {
  if (error instanceof PageError) return error.info;
  return { message: String(error?.message ?? error), kind: "page", status: null, error_code: null, retry_after: null };
}

/** fetch from the page's own server; when that server does not answer at all, a PageError of kind "offline". */
async function pageFetch(path, init = {}) {
  try {
    return await fetch(path, init);
  } catch (error) {
    if (init.signal?.aborted) throw error;
    throw new PageError({ message: String(error?.message ?? error), kind: "offline", status: null, error_code: null, retry_after: null });
  }
}

/** Retry-After as seconds: a number of seconds or an HTTP date. */
function retrySeconds(value) {
  if (!value) return 0;
  if (/^\d+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? 0 : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/**
 * A failure in the user's words: what is wrong and what to do about it. `during` says what failed:
 * "load" (asking for the agents), "answer" (an answer that had begun), else a request. The page
 * server's own validation text is never shown (the page does not send what it would refuse).
 */
function describe(info, { during = "", agent = state.agent } = {}) {
  const answer = during === "answer";
  switch (info.kind) {
    case "page":
      return info.message;
    case "offline":
      return answer
        ? "The connection to the chat page's server was lost during the answer. Check that bin/chat-ui is still running, then press Retry."
        : "The chat page's server does not answer. Check that bin/chat-ui is still running, then press Retry.";
    case "network":
      return answer
        ? "The connection to agenthost was lost during the answer (agenthost may have stopped or restarted). Press Retry to send the message again."
        : "The chat page cannot reach agenthost. Check that agenthost is running and that the chat page's AGENTHOST_URL points at it, then press Retry.";
    case "timeout":
      return "agenthost took too long to answer. Press Retry to try again.";
    case "protocol":
      return "agenthost sent an answer the chat page cannot read. Check that the chat page's AGENTHOST_URL points at agenthost.";
    case "event":
      return `The run failed. (${info.message})`;
    case "internal":
      return `The chat page's server failed (${info.status ?? "no status"}); its output says why. Press Retry to try again.`;
    case "request":
      // The page's own server refused the request.
      if (info.status === 413 || info.status === 421) return `${info.message.charAt(0).toUpperCase()}${info.message.slice(1)}.`;
      if (info.status === 404 && answer) return "The chat page's server no longer has this answer (it was restarted). Open the conversation again to see what was saved.";
      return `The chat page's server did not accept this request (${info.status}). The page may be out of date: reload it.`;
  }
  switch (info.status) {
    case 401:
      return "agenthost did not accept the chat page's token. Set the chat page's AUTH_SECRET to a token agenthost accepts and restart the chat page, then press Retry.";
    case 403:
      if (info.error_code === "forbidden_user") {
        return "agenthost does not let the chat page's token act for the chat page's user. Set CHAT_UI_USER_ID to the token's user (or leave it unset) and restart the chat page.";
      }
      if (info.error_code === "agent_forbidden") return `agenthost does not let this chat page use the agent "${agent}". Choose another agent.`;
      if (info.error_code === "feedback_proof_required" || info.error_code === "feedback_proof_invalid") {
        return "agenthost did not take this rating: the chat page no longer holds the answer's proof (the chat page was restarted, or the answer is old).";
      }
      return "agenthost refused this request (403): the chat page's token does not allow it.";
    case 404:
      if (info.error_code === "unknown_agent") return `agenthost no longer offers the agent "${agent}".`;
      if (during === "load") return "What the chat page's AGENTHOST_URL points at does not answer like agenthost (404). Check AGENTHOST_URL.";
      return "agenthost could not find what the page asked for (404).";
    case 409:
      return "This conversation is busy with another request. Wait for it to finish, then send again.";
    case 429:
      return "agenthost is receiving too many requests (429). Wait a moment, then press Retry.";
    case 503: {
      const wait = info.retry_after ? ` Retry after ${info.retry_after}${/^\d+$/.test(info.retry_after) ? " s" : ""}.` : "";
      return `agenthost is busy or unavailable (503).${wait}`;
    }
    default:
      if (info.status >= 500) return `agenthost failed to answer (${info.status}). Press Retry; if it keeps failing, agenthost's log says why.`;
      return `agenthost refused the request (${info.status ?? "no status"}).`;
  }
}

/**
 * Show a failure in the user's words; with `retry`, a Retry button that does it again, held back for
 * the Retry-After a 503 named (it counts down). `context`: what failed (`during`, see describe), and a
 * `note` said after it (what became of the message). An agent agenthost no longer offers is handled
 * by agentGone, which loads the agents again.
 */
function showError(error, retry = null, context = {}) {
  const info = infoOf(error);
  if (info.error_code === "unknown_agent") {
    void agentGone(state.agent, context);
    return;
  }
  const scroller = document.scrollingElement ?? document.documentElement;
  const atEnd = scroller.scrollHeight - scroller.scrollTop - window.innerHeight < 48;
  clearError();
  els.error.textContent = context.note ? `${describe(info, context)} ${context.note}` : describe(info, context);
  els.error.dataset.status = info.status == null ? "" : String(info.status);
  els.error.hidden = false;
  // The error makes the message box taller: a reader at the end keeps the last message in view above it.
  if (atEnd) scrollDown();
  if (!retry) return;
  state.retry = retry;
  els.retry.hidden = false;
  let wait = info.status === 503 ? retrySeconds(info.retry_after) : 0;
  const tick = () => {
    els.retry.disabled = wait > 0;
    els.retry.textContent = wait > 0 ? `Retry in ${wait} s` : "Retry";
    if (wait-- > 0) state.retryTimer = window.setTimeout(tick, 1000);
  };
  tick();
}

function clearError() {
  window.clearTimeout(state.retryTimer);
  state.retry = null;
  els.retry.hidden = true;
  els.error.hidden = true;
  els.error.textContent = "";
  delete els.error.dataset.status;
}

// ---- server calls ----------------------------------------------------------------------------

async function api(path, body) {
  const response = await pageFetch(path, body === undefined ? {} : {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new PageError(data.error ?? { message: `The chat page answered ${response.status}.`, status: response.status });
  return data;
}

/** Read the page server's JSON Lines answer, one event at a time. */
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    buffer += decoder.decode(value ?? new Uint8Array(), { stream: !done });
    let newline;
    while ((newline = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line) yield JSON.parse(line);
    }
    if (done) return;
  }
}

// ---- conversations ---------------------------------------------------------------------------

/** The paused run's card the conversation ends with, while it is not answered. */
function openInterrupt() {
  const last = els.messages.lastElementChild;
  return last?.classList.contains("interrupt") && last.getAttribute("data-answered") !== "true" ? last : null;
}

function setBusy(busy) {
  document.body.dataset.state = busy ? "busy" : "idle";
  els.agent.disabled = busy;
  // A run that waits on an approval or a question is answered in its card, not with a new message.
  const waiting = !busy && openInterrupt() !== null;
  document.body.toggleAttribute("data-awaiting", waiting);
  els.send.disabled = busy || waiting;
  els.input.disabled = els.attach.disabled = waiting;
  els.input.placeholder = waiting ? "Answer the agent's request above to go on." : INPUT_PLACEHOLDER;
}

function setStreaming(streaming) {
  els.send.hidden = streaming;
  els.stop.hidden = !streaming;
  els.stop.disabled = false;
}

function updateUrl() {
  const params = new URLSearchParams({ agent: state.agent });
  if (state.threadId) params.set("thread_id", state.threadId);
  history.replaceState(null, "", `?${params}`);
  els.deleteChat.disabled = !state.threadId;
  for (const item of els.threadList.querySelectorAll("button.thread")) {
    const current = /** @type {HTMLElement} */ (item).dataset.threadId === state.threadId;
    if (current) item.setAttribute("aria-current", "true");
    else item.removeAttribute("aria-current");
  }
}

function showAgentDescription() {
  const agent = state.agents.find((a) => a.key === state.agent);
  els.description.textContent = agent?.description ?? "";
}

function threadItem(thread) {
  const item = element("li");
  const button = element("button", "thread");
  button.type = "button";
  button.dataset.threadId = thread.thread_id;
  button.append(element("span", "thread-title", thread.title?.trim() || "Untitled conversation"));
  const when = new Date(thread.updated_at);
  button.append(element("span", "thread-time", Number.isNaN(when.getTime()) ? "" : when.toLocaleString()));
  button.title = thread.title ?? "";
  button.addEventListener("click", () => {
    document.body.dataset.sidebar = "closed";
    void openThread(thread.thread_id);
  });
  item.append(button);
  return item;
}

/**
 * A conversation that has just started goes on top of the sidebar at once (the list from the service
 * replaces it when the answer ends).
 */
function showNewThread(threadId, title) {
  state.started = { thread_id: threadId, title, updated_at: new Date().toISOString() };
  if (state.threads.some((thread) => thread.thread_id === threadId)) return;
  state.threads = [state.started, ...state.threads];
  els.threadList.prepend(threadItem(state.threads[0]));
  els.threadsEmpty.hidden = true;
}

/**
 * The agent's conversations, newest first: the first page again, or the next one (`more`). A
 * `quiet` refresh (after an answer) that fails leaves the list as it was and the shown error alone.
 */
async function loadThreads(more = false, quiet = false) {
  const agent = state.agent;
  const params = new URLSearchParams({ agent });
  if (more && state.threadsNext !== null) params.set("offset", String(state.threadsNext));
  try {
    const page = await api(`/api/threads?${params}`);
    if (agent !== state.agent) return;
    state.threads = more ? [...state.threads, ...page.threads] : page.threads;
    // A list asked for before the streaming answer's conversation was stored does not have it yet.
    const started = state.started;
    if (!more && started && !state.threads.some((thread) => thread.thread_id === started.thread_id)) state.threads = [started, ...state.threads];
    state.threadsNext = page.next_offset;
    els.threadList.replaceChildren(...state.threads.map(threadItem));
    els.moreThreads.hidden = page.next_offset === null;
    els.threadsEmpty.hidden = state.threads.length > 0;
    els.threadList.dataset.loaded = String(Date.now());
    updateUrl();
  } catch (error) {
    if (!quiet) showError(error, () => void loadThreads(more));
  }
}

function stopReading() {
  state.running?.abort();
  state.running = null;
}

function newChat() {
  stopReading();
  state.generation++;
  state.threadId = null;
  state.older = null;
  els.older.hidden = true;
  els.messages.replaceChildren();
  clearError();
  updateUrl();
  // Reading the answer (if any) stopped above: the page is ready for a new message.
  setBusy(false);
  setStreaming(false);
  els.input.focus();
}

/** Open a conversation: its newest page of messages; earlier pages come on scrolling up. */
async function openThread(threadId) {
  stopReading();
  const generation = ++state.generation;
  state.threadId = threadId;
  state.older = null;
  els.older.hidden = true;
  els.messages.replaceChildren();
  clearError();
  updateUrl();
  setBusy(true);
  try {
    const params = new URLSearchParams({ agent: state.agent, thread_id: threadId });
    const page = await api(`/api/history?${params}`);
    if (generation !== state.generation) return;
    els.messages.replaceChildren(...page.messages.flatMap(messageView));
    // A run paused on an approval or a question: what it waits for is not a stored message.
    if (Array.isArray(page.interrupts) && page.interrupts.length > 0) els.messages.append(interruptView(page.interrupts));
    disableOldInterrupts();
    state.older = page.older;
    els.older.hidden = page.older === null;
    scrollDown();
  } catch (error) {
    if (generation === state.generation) showError(error, () => void openThread(threadId));
  } finally {
    if (generation === state.generation) setBusy(false);
  }
}

let loadingOlder = false;

/** Put the page of messages before the shown ones on top, keeping what the reader sees in place. */
async function loadOlder() {
  if (loadingOlder || state.older === null || !state.threadId) return;
  loadingOlder = true;
  const generation = state.generation;
  try {
    const params = new URLSearchParams({ agent: state.agent, thread_id: state.threadId, before: String(state.older) });
    const page = await api(`/api/history?${params}`);
    if (generation !== state.generation) return;
    const scroller = document.scrollingElement ?? document.documentElement;
    const fromBottom = scroller.scrollHeight - scroller.scrollTop;
    els.messages.prepend(...page.messages.flatMap(messageView));
    disableOldInterrupts();
    scroller.scrollTop = scroller.scrollHeight - fromBottom;
    state.older = page.older;
    els.older.hidden = page.older === null;
  } catch (error) {
    showError(error, () => void loadOlder());
  } finally {
    loadingOlder = false;
  }
}

async function deleteChat() {
  if (!state.threadId) return;
  els.confirmDelete.returnValue = "";
  els.confirmDelete.showModal();
  const choice = await new Promise((resolve) => {
    els.confirmDelete.addEventListener("close", () => resolve(els.confirmDelete.returnValue), { once: true });
  });
  if (choice !== "delete" || !state.threadId) return;
  const threadId = state.threadId;
  try {
    await api("/api/clear", { agent: state.agent, thread_id: threadId });
    newChat();
    await loadThreads();
  } catch (error) {
    showError(error);
  }
}

async function stopRun() {
  if (!state.threadId || !state.running) return;
  els.stop.disabled = true;
  try {
    await api("/api/cancel", { agent: state.agent, thread_id: state.threadId });
  } catch (error) {
    els.stop.disabled = false;
    showError(error);
  }
}

/**
 * Put a message that was not sent back in the message box, unless something new was typed there
 * meanwhile. True when it is back.
 */
function restoreDraft(text, attachments) {
  if (els.input.value.trim() !== "" || state.attachments.length > 0) return false;
  els.input.value = text;
  state.attachments = attachments;
  showAttachments();
  return true;
}

/** A new conversation whose first message was not sent does not exist: it leaves the sidebar and the URL. */
function forgetThread(threadId) {
  state.threadId = null;
  state.started = null;
  state.threads = state.threads.filter((thread) => thread.thread_id !== threadId);
  for (const item of els.threadList.querySelectorAll("button.thread")) {
    if (/** @type {HTMLElement} */ (item).dataset.threadId === threadId) item.closest("li")?.remove();
  }
  els.threadsEmpty.hidden = state.threads.length > 0;
  updateUrl();
}

/**
 * Send a message and show the answer as it streams in. An answer to a paused run (`echo: false`) is
 * shown in its card rather than as a message of its own, as the service does not record it as one;
 * answers to questions go in `resume`, keyed by interrupt id.
 *
 * A message refused before its run began (agenthost unreachable, a refused token, a gone agent, a busy
 * conversation) was not sent: its bubble goes, and the message goes back in the message box (or, when
 * something new was typed there, its bubble stays marked "Not sent"). A failure after the answer began
 * keeps what arrived, marked "Interrupted".
 */
async function send(text, { echo = true, attachments = [], resume = undefined } = {}) {
  clearError();
  stopReading();
  disableOldInterrupts();
  const threadBefore = state.threadId;
  /** The page's server took the message (its first event came). */
  let accepted = false;
  /** The run answered something. */
  let begun = false;
  let interrupted = false;
  const blocks = [...(text ? [{ type: "text", text }] : []), ...attachments];
  const human = echo ? messageView({ type: "human", content: attachments.length ? blocks : text }) : [];
  els.messages.append(...human);
  let pending = element("div", "msg ai streaming");
  let stream = new MarkdownStream(pending);
  let answered = false;
  let stopped = false;
  els.messages.append(pending);
  scrollDown();
  const controller = new AbortController();
  state.running = controller;
  const generation = state.generation;
  setBusy(true);
  setStreaming(true);
  /** Start the answer again in place of what streamed so far. */
  const fresh = () => {
    const next = element("div", "msg ai streaming");
    pending.replaceWith(next);
    pending = next;
    stream = new MarkdownStream(pending);
  };
  /** The answer so far is complete: anything more streams after it. */
  const next = () => {
    const after = element("div", "msg ai streaming");
    pending.after(after);
    pending = after;
    stream = new MarkdownStream(pending);
  };
  try {
    let response = await pageFetch("/api/chat", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        agent: state.agent,
        thread_id: state.threadId ?? undefined,
        message: text,
        ...(attachments.length ? { attachments: attachments.map(({ type, base64, mime_type, filename }) => ({ type, base64, mime_type, filename })) } : {}),
        ...(resume ? { resume } : {}),
      }),
      signal: controller.signal,
    });
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      throw new PageError(data.error ?? { message: `The chat page answered ${response.status}.`, status: response.status });
    }
    const handle = (event) => {
      if (event.type === "thread") {
        accepted = true;
        state.threadId = event.thread_id;
        showNewThread(event.thread_id, text || textOf(attachments.map(({ type }) => ({ type }))));
        updateUrl();
      } else if (event.type === "token") {
        begun = true;
        stream.append(event.content);
      } else if (event.type === "message" && event.content.type !== "human") {
        begun = true;
        const message = event.content;
        const isAnswer = message.type === "ai" && (message.tool_calls ?? []).length === 0 && !message.interrupts;
        if (isAnswer && resume && answeredBefore(message)) {
          // Shown when the question it answers was answered.
          fresh();
        } else if (isAnswer && textOf(message.content) === stream.text && stream.text.trim() !== "") {
          // The streamed text is the answer: finish its last block rather than render it all again.
          stream.finish();
          pending.classList.remove("streaming");
          answerTexts.set(pending, stream.text);
          if (message.run_id) pending.append(feedbackView(message.run_id));
          answered = true;
          next();
        } else if (isAnswer || message.interrupts) {
          // What follows (a question's answer is followed by the questions still open) goes after it.
          pending.before(...messageView(message));
          fresh();
          answered = true;
          if (message.interrupts) disableOldInterrupts(pending.previousElementSibling);
        } else if (alreadyShown(message)) {
          // A resumed run repeats the tool call it paused before.
        } else {
          // A tool step: it goes before the answer, which starts again.
          pending.before(...messageView(message));
          fresh();
        }
      } else if (event.type === "error") {
        if (event.error?.error_code === "run_cancelled") {
          stopped = true;
          return;
        }
        throw new PageError(event.error);
      }
      scrollDown();
    };
    // Read the answer; when the connection to the page's server drops before its end, follow it again
    // from the last event seen (a few tries, backing off).
    let streamId = null;
    let seen = 0;
    let ended = false;
    for (let attempt = 0; ; ) {
      try {
        if (response) for await (const event of events(response)) {
          if (typeof event.seq === "number") seen = event.seq;
          if (event.type === "thread") streamId = event.stream_id ?? null;
          if (event.type === "done" || event.type === "error") ended = true;
          attempt = 0;
          handle(event);
        }
      } catch (error) {
        if (controller.signal.aborted || error instanceof PageError || !streamId) throw error;
      }
      if (ended || !streamId) break;
      if (++attempt > 5) throw new PageError({ message: "The connection to the chat page was lost.", kind: "offline", status: null, error_code: null, retry_after: null });
      pending.dataset.reconnecting = "true";
      await new Promise((resolve) => window.setTimeout(resolve, Math.min(200 * 2 ** (attempt - 1), 3000)));
      if (controller.signal.aborted) return;
      try {
        const params = new URLSearchParams({ stream_id: streamId, after: String(seen) });
        response = await fetch(`/api/chat/follow?${params}`, { signal: controller.signal });
        if (!response.ok) {
          const data = await response.json().catch(() => ({}));
          throw new PageError(data.error ?? { message: `The chat page answered ${response.status}.`, status: response.status });
        }
        delete pending.dataset.reconnecting;
      } catch (error) {
        if (controller.signal.aborted || error instanceof PageError) throw error;
        response = null;
      }
    }
  } catch (error) {
    if (controller.signal.aborted) return;
    const again = () => {
      // An answer to a question may have reached the run before the failure: show the conversation
      // as it is now, with what it still asks, rather than answer again.
      if (resume && state.threadId) {
        void openThread(state.threadId);
        return;
      }
      for (const node of human) node.remove();
      pending.remove();
      void send(text, { echo, attachments });
    };
    const { kind } = infoOf(error);
    // Refused before the run began: by the page's server or agenthost (an answer), or agenthost could
    // not be reached, or the page's server could not be (before it took the message).
    const notSent = !begun && (kind === "http" || kind === "request" || kind === "internal" || kind === "network" || (kind === "offline" && !accepted));
    if (!notSent) {
      interrupted = true;
      showError(error, again, { during: "answer" });
    } else if (!echo) {
      showError(error, again);
    } else {
      if (threadBefore === null && state.threadId !== null) forgetThread(state.threadId);
      const back = restoreDraft(text, attachments);
      for (const node of human) {
        if (back) node.remove();
        else {
          node.classList.add("not-sent");
          node.append(element("div", "failed-note", "Not sent"));
        }
      }
      const note = back ? "Your message was not sent; it is back in the message box." : "Your message was not sent.";
      showError(error, back ? () => els.composer.requestSubmit() : again, { note, draft: back });
    }
  } finally {
    // `pending` holds what streamed after the last complete message, if anything.
    stream.finish();
    pending.classList.remove("streaming");
    if (stopped && (stream.text !== "" || !answered)) {
      pending.classList.add("stopped");
      pending.append(element("div", "stopped-note", "Stopped"));
    } else if (interrupted && stream.text !== "") {
      pending.classList.add("interrupted");
      pending.append(element("div", "failed-note", "Interrupted"));
    } else if (stream.text === "") pending.remove();
    if (state.running === controller) state.running = null;
    state.started = null;
    if (generation === state.generation) {
      setBusy(false);
      setStreaming(false);
      void loadThreads(false, true);
    }
  }
}

// ---- start -----------------------------------------------------------------------------------

function isTyping(target) {
  return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
}

function bindControls() {
  els.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = els.input.value.trim();
    if ((!text && state.attachments.length === 0) || document.body.dataset.state === "busy" || openInterrupt()) return;
    if (text.length > MAX_MESSAGE_CHARS) {
      showError(new Error(`The message is too long: at most ${MAX_MESSAGE_CHARS.toLocaleString("en")} characters. It was not sent.`));
      return;
    }
    if (!state.agent) {
      // No agent is loaded (agenthost was down, or refused the token, when the page opened): nothing is
      // sent, the message stays in the box, and the agents are asked for again; once they come, it goes.
      const resend = () => els.composer.requestSubmit();
      void ready({ retry: resend, note: "No agent could be loaded, so your message was not sent; it is still in the message box." }).then((loaded) => {
        if (loaded) resend();
      });
      return;
    }
    els.input.value = "";
    const attachments = state.attachments;
    state.attachments = [];
    showAttachments();
    void send(text, { attachments });
  });
  els.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      els.composer.requestSubmit();
    }
  });
  // Shortcuts: Esc stops the answer, Ctrl/Cmd+Shift+O starts a new chat, "/" goes to the message box.
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && state.running && !els.confirmDelete.open) {
      event.preventDefault();
      void stopRun();
    } else if ((event.ctrlKey || event.metaKey) && event.shiftKey && event.key.toLowerCase() === "o") {
      event.preventDefault();
      newChat();
    } else if (event.key === "/" && !isTyping(event.target)) {
      event.preventDefault();
      els.input.focus();
    }
  });
  els.newChat.addEventListener("click", () => {
    document.body.dataset.sidebar = "closed";
    newChat();
  });
  els.stop.addEventListener("click", () => void stopRun());
  els.retry.addEventListener("click", () => {
    const retry = state.retry;
    clearError();
    retry?.();
  });
  els.older.addEventListener("click", () => void loadOlder());
  new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) void loadOlder();
  }).observe(els.older);
  els.moreThreads.addEventListener("click", () => void loadThreads(true));
  els.deleteChat.addEventListener("click", () => void deleteChat());
  els.toggleSidebar.addEventListener("click", () => {
    const open = document.body.dataset.sidebar !== "open";
    document.body.dataset.sidebar = open ? "open" : "closed";
    els.toggleSidebar.setAttribute("aria-expanded", String(open));
  });
  // On a phone, a tap beside the open sidebar closes it.
  $("main").addEventListener("click", (event) => {
    if (document.body.dataset.sidebar !== "open" || els.toggleSidebar.contains(/** @type {Node} */ (event.target))) return;
    document.body.dataset.sidebar = "closed";
    els.toggleSidebar.setAttribute("aria-expanded", "false");
  });
  els.agent.addEventListener("change", () => useAgent(els.agent.value));
}

/** Talk to `agent` from now on: a new chat, and its conversations in the sidebar. */
function useAgent(agent) {
  state.agent = agent;
  els.agent.value = agent;
  showAgentDescription();
  newChat();
  void loadThreads();
}

/**
 * Ask for the agents and the upload limits, and list the agents; the chosen agent stays chosen while
 * it is listed. An empty list is a failure.
 */
async function loadAgents() {
  const info = await api("/api/agents");
  if (!Array.isArray(info.agents) || info.agents.length === 0) throw new Error("agenthost offers no agents. Check its AGENT_PATHS, then press Retry.");
  state.agents = info.agents;
  if (info.limits) state.limits = info.limits;
  els.attach.hidden = state.limits.max_attachments === 0;
  els.agent.replaceChildren(...info.agents.map((a) => {
    const option = element("option", "", a.key);
    option.value = a.key;
    return option;
  }));
  if (info.agents.some((a) => a.key === state.agent)) els.agent.value = state.agent;
  return info;
}

/**
 * agenthost answered that it has no agent named `gone` (404 unknown_agent; restarted with other
 * AGENT_PATHS, say). List the agents again: when `gone` is not among them, switch to the default
 * agent in a new chat and say so; a message that was not sent is in the message box
 * (`context.draft`), ready to go to the new agent.
 */
async function agentGone(gone, context) {
  let info;
  try {
    info = await loadAgents();
  } catch (error) {
    showError(error, () => void ready(), { during: "load" });
    return;
  }
  const message = context.draft ? " Your message was not sent; it is back in the message box." : "";
  if (info.agents.some((a) => a.key === gone)) {
    // Listed again already (agenthost came back with it).
    showError(new Error(`agenthost did not find the agent "${gone}", but lists it again now.${message}`), context.draft ? () => els.composer.requestSubmit() : null);
    return;
  }
  const next = info.agents.some((a) => a.key === info.default_agent) ? info.default_agent : info.agents[0].key;
  useAgent(next);
  showError(new Error(`agenthost no longer offers the agent "${gone}", so the page switched to ${next} (you can choose another agent above).${message}`));
}

/**
 * Load the agents, then what the URL names. At start, and again after a failure (Retry, or sending a
 * message): the page recovers in place once agenthost answers or the chat page's token is fixed,
 * without a reload. False when the agents could not be loaded; the failure is shown, with a Retry
 * that does `context.retry` (by default, this again) and the `context.note`.
 */
async function ready(context = {}) {
  setBusy(true);
  let info;
  try {
    info = await loadAgents();
  } catch (error) {
    setBusy(false);
    showError(error, context.retry ?? (() => void ready()), { during: "load", note: context.note });
    return false;
  }
  clearError();
  const params = new URLSearchParams(location.search);
  const wanted = params.get("agent");
  const known = info.agents.some((a) => a.key === wanted);
  state.agent = known && wanted ? wanted : info.default_agent;
  els.agent.value = state.agent;
  showAgentDescription();
  setBusy(false);
  const threads = loadThreads();
  if (wanted && !known) {
    showError(new Error(`There is no agent named "${wanted}"; showing ${state.agent} instead.`));
    updateUrl();
  } else if (params.get("thread_id")) {
    await openThread(/** @type {string} */ (params.get("thread_id")));
  } else {
    updateUrl();
  }
  await threads;
  return true;
}

bindControls();
bindAttachments();
void ready();
