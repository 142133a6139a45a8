/* global document */
// The page's Markdown: marked (GitHub-flavoured: tables, nested lists, fenced code) turns text into
// HTML, raw HTML in the text is shown as text, and DOMPurify cleans the result before it reaches the
// page. Both libraries are served by the page's own server (/vendor/...).
import { Marked } from "/vendor/marked.js";
import DOMPurify from "/vendor/purify.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    // A model's `<script>` or `<img onerror>` is text the reader should see, not markup.
    html: ({ text }) => escapeHtml(text),
    // Images from other hosts are blocked by the page's CSP anyway: show them as links.
    image: ({ href, text }) => `<a href="${escapeHtml(href)}">${escapeHtml(text || href)}</a>`,
  },
});

const PURIFY = {
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "img"],
  FORBID_ATTR: ["style", "id"],
  RETURN_DOM_FRAGMENT: true,
};

/** Sanitised nodes for some HTML: links open in a new tab, links without a safe target become text. */
function toNodes(html) {
  const fragment = DOMPurify.sanitize(html, PURIFY);
  for (const link of fragment.querySelectorAll("a")) {
    if (!link.getAttribute("href")) {
      link.replaceWith(...link.childNodes);
      continue;
    }
    link.target = "_blank";
    link.rel = "noopener noreferrer";
  }
  for (const pre of fragment.querySelectorAll("pre")) addCopyButton(pre);
  for (const table of fragment.querySelectorAll("table")) {
    const scroller = document.createElement("div");
    scroller.className = "table-scroll";
    table.replaceWith(scroller);
    scroller.append(table);
  }
  return [...fragment.childNodes];
}

function addCopyButton(pre) {
  const code = pre.querySelector("code") ?? pre;
  const language = /language-([\w+#-]+)/.exec(code.className)?.[1];
  const bar = document.createElement("div");
  bar.className = "code-bar";
  bar.textContent = language ?? "";
  const button = document.createElement("button");
  button.type = "button";
  button.className = "copy-code";
  button.textContent = "Copy";
  button.addEventListener("click", () => {
    navigator.clipboard.writeText(code.textContent ?? "").then(
      () => (button.textContent = "Copied"),
      () => (button.textContent = "Copy failed"),
    );
  });
  bar.append(button);
  pre.before(bar);
  const block = document.createElement("div");
  block.className = "code-block";
  bar.replaceWith(block);
  block.append(bar, pre);
}

/** A whole Markdown text as sanitised DOM nodes. */
export function renderMarkdown(source) {
  return toNodes(marked.parse(String(source)));
}

/**
 * A Markdown answer that grows token by token, rendered into `container`. Blocks the text has moved
 * past (a paragraph followed by a blank line, a closed code fence, a list followed by something else)
 * are rendered once and kept; only the last, still open block is rendered again on each token, so a
 * long answer costs about as much as its length, not its length squared.
 */
export class MarkdownStream {
  constructor(container) {
    this.container = container;
    this.source = "";
    /** How much of `source` is rendered for good. */
    this.settled = 0;
    /** The nodes of the open block. */
    this.tail = [];
  }

  get text() {
    return this.source;
  }

  append(text) {
    this.source += text;
    this.render(false);
  }

  /** Render what is left (the last block, now complete). */
  finish() {
    this.render(true);
  }

  render(final) {
    const rest = this.source.slice(this.settled);
    const tokens = marked.lexer(rest);
    let open = tokens.length - 1;
    while (open > 0 && tokens[open].type === "space") open--;
    if (final) open = tokens.length;
    const done = tokens.slice(0, Math.max(open, 0));
    const raw = done.map((token) => token.raw).join("");
    for (const node of this.tail) node.remove();
    this.tail = [];
    // The lexer normalises some input (line endings); settle only when its tokens spell the text exactly.
    if (done.length > 0 && rest.startsWith(raw)) {
      this.container.append(...toNodes(marked.parser(done)));
      this.settled += raw.length;
      this.tail = toNodes(marked.parser(tokens.slice(done.length)));
    } else {
      this.tail = toNodes(marked.parser(tokens));
    }
    this.container.append(...this.tail);
    if (final) this.tail = [];
  }
}
