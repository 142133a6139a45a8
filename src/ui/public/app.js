/* global document, window, history, location */
// The chat page's browser code: no framework, no build. It talks only to the page's own server
// (/api/...), which holds the agenthost token and user id; nothing secret reaches this script.
import { renderMarkdown } from "/markdown.js";

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
};

const state = { agents: [], agent: "", threadId: /** @type {string | null} */ (null), running: null };

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
      await api("/api/feedback", { agent: state.agent, run_id: runId, score });
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

/** One message as nodes: collapsed tool calls and results, a Markdown answer with feedback. */
function messageView(message) {
  const nodes = [];
  if (message.type === "human") {
    nodes.push(element("div", "msg human", textOf(message.content)));
    return nodes;
  }
  if (message.type === "tool") {
    const details = element("details", "tool");
    details.append(element("summary", "", `Tool result${message.name ? `: ${message.name}` : ""}`));
    details.append(element("pre", "", textOf(message.content)));
    nodes.push(details);
    return nodes;
  }
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  nodes.push(...toolCallsView(calls));
  const text = textOf(message.content);
  if (text.trim() !== "") {
    const bubble = element("div", `msg ${message.type === "ai" ? "ai" : "other"}`);
    bubble.innerHTML = renderMarkdown(text);
    if (message.type === "ai" && calls.length === 0 && message.run_id) bubble.append(feedbackView(message.run_id));
    nodes.push(bubble);
  }
  return nodes;
}

function scrollDown() {
  window.scrollTo({ top: document.body.scrollHeight });
}

// ---- errors ----------------------------------------------------------------------------------

class PageError extends Error {
  constructor(info) {
    super(info.message);
    this.info = info;
  }
}

function describe(info) {
  const detail = info.message ?? "Unknown error.";
  switch (info.status) {
    case 409:
      return `This conversation is busy with another request. Wait for it to finish, then send again. (${detail})`;
    case 503: {
      const wait = info.retry_after ? ` Retry after ${info.retry_after}${/^\d+$/.test(info.retry_after) ? " s" : ""}.` : "";
      return `agenthost is busy or unavailable (503).${wait} (${detail})`;
    }
    case 401:
    case 403:
      return `agenthost refused the chat page's credentials (${info.status}). (${detail})`;
    default:
      if (info.kind === "event") return `The run failed. (${detail})`;
      if (info.kind === "network") return `agenthost cannot be reached. (${detail})`;
      return detail;
  }
}

function showError(error) {
  const info = error instanceof PageError ? error.info : { message: String(error?.message ?? error) };
  els.error.textContent = describe(info);
  els.error.dataset.status = info.status == null ? "" : String(info.status);
  els.error.hidden = false;
}

function clearError() {
  els.error.hidden = true;
  els.error.textContent = "";
}

// ---- server calls ----------------------------------------------------------------------------

async function api(path, body) {
  const response = await fetch(path, body === undefined ? {} : {
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

// ---- conversation ----------------------------------------------------------------------------

function setBusy(busy) {
  document.body.dataset.state = busy ? "busy" : "idle";
  els.send.disabled = busy;
  els.agent.disabled = busy;
}

function updateUrl() {
  const params = new URLSearchParams({ agent: state.agent });
  if (state.threadId) params.set("thread_id", state.threadId);
  history.replaceState(null, "", `?${params}`);
}

function showAgentDescription() {
  const agent = state.agents.find((a) => a.key === state.agent);
  els.description.textContent = agent?.description ?? "";
}

function newChat() {
  state.running?.abort();
  state.threadId = null;
  els.messages.replaceChildren();
  clearError();
  updateUrl();
  els.input.focus();
}

/** Show the conversation named in the URL. It stays the current one even if its history cannot be read. */
async function restore(threadId) {
  state.threadId = threadId;
  setBusy(true);
  try {
    const params = new URLSearchParams({ agent: state.agent, thread_id: threadId });
    const { messages } = await api(`/api/history?${params}`);
    els.messages.replaceChildren(...messages.flatMap(messageView));
    scrollDown();
  } catch (error) {
    showError(error);
  } finally {
    setBusy(false);
  }
}

async function send(text) {
  clearError();
  els.messages.append(...messageView({ type: "human", content: text }));
  const pending = element("div", "msg ai streaming");
  let streamed = "";
  let answered = false;
  els.messages.append(pending);
  scrollDown();
  const controller = new AbortController();
  state.running = controller;
  setBusy(true);
  try {
    const response = await fetch("/api/chat", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: state.agent, thread_id: state.threadId ?? undefined, message: text }),
      signal: controller.signal,
    });
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      throw new PageError(data.error ?? { message: `The chat page answered ${response.status}.`, status: response.status });
    }
    for await (const event of events(response)) {
      if (event.type === "thread") {
        state.threadId = event.thread_id;
        updateUrl();
      } else if (event.type === "token") {
        streamed += event.content;
        pending.innerHTML = renderMarkdown(streamed);
      } else if (event.type === "message" && event.content.type !== "human") {
        // The complete message replaces the streamed text; tool steps go before the answer.
        const nodes = messageView(event.content);
        const isAnswer = event.content.type === "ai" && (event.content.tool_calls ?? []).length === 0;
        if (isAnswer) {
          pending.replaceWith(...nodes);
          answered = true;
        } else {
          pending.before(...nodes);
          streamed = "";
          pending.replaceChildren();
        }
      } else if (event.type === "error") {
        throw new PageError(event.error);
      }
      scrollDown();
    }
  } catch (error) {
    if (controller.signal.aborted) return;
    showError(error);
  } finally {
    if (!answered) {
      pending.classList.remove("streaming");
      if (streamed === "") pending.remove();
    }
    if (state.running === controller) state.running = null;
    setBusy(false);
  }
}

// ---- start -----------------------------------------------------------------------------------

async function start() {
  els.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = els.input.value.trim();
    if (!text || document.body.dataset.state === "busy") return;
    els.input.value = "";
    void send(text);
  });
  els.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      els.composer.requestSubmit();
    }
  });
  els.newChat.addEventListener("click", newChat);
  els.agent.addEventListener("change", () => {
    state.agent = els.agent.value;
    showAgentDescription();
    newChat();
  });

  setBusy(true);
  let info;
  try {
    info = await api("/api/agents");
  } catch (error) {
    showError(error);
    setBusy(false);
    return;
  }
  state.agents = info.agents;
  els.agent.replaceChildren(...info.agents.map((a) => {
    const option = element("option", "", a.key);
    option.value = a.key;
    return option;
  }));
  const params = new URLSearchParams(location.search);
  const wanted = params.get("agent");
  const known = info.agents.some((a) => a.key === wanted);
  state.agent = known && wanted ? wanted : info.default_agent;
  els.agent.value = state.agent;
  showAgentDescription();
  setBusy(false);
  if (wanted && !known) {
    showError(new Error(`There is no agent named "${wanted}"; showing ${state.agent} instead.`));
    updateUrl();
  } else if (params.get("thread_id")) {
    await restore(/** @type {string} */ (params.get("thread_id")));
  } else {
    updateUrl();
  }
}

void start();
