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

/** An opening code fence: up to three spaces, then three or more backticks or tildes. */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** Whether a line closes a code block opened with `fence`. */
function closesFence(line, fence) {
  const match = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(line);
  return match !== null && match[1][0] === fence[0] && match[1].length >= fence.length;
}

/** The list element of some rendered nodes. */
function listElement(nodes) {
  return nodes.find((node) => node.nodeName === "UL" || node.nodeName === "OL");
}

/** One item of a list token as a sanitised `<li>`. */
function itemNode(list, item) {
  return listElement(toNodes(marked.parser([{ ...list, items: [item] }])))?.firstElementChild ?? document.createElement("li");
}

/**
 * A Markdown answer that grows token by token, rendered into `container`, at a cost that grows with
 * the answer's length, not its square. Blocks the text has moved past (a paragraph followed by a blank
 * line, a closed code fence, a list followed by something else) are rendered once and kept. Of the
 * open block, only what can still change is rendered again: an open code block gets each new line
 * appended to its text; an open list keeps its finished items and renders only its last one again; any
 * other block (a paragraph, a table) is rendered again whole. When a code block or list closes, it is
 * rendered once more from its source, so the result is what rendering the whole answer gives.
 */
export class MarkdownStream {
  constructor(container) {
    this.container = container;
    this.source = "";
    /** How much of `source` is rendered for good. */
    this.settled = 0;
    /** The nodes of the open block (or of an open list's last item). */
    this.tail = [];
    /** An open fenced code block: its fence, its nodes, its text nodes, and how far `source` is shown in it. */
    this.code = null;
    /** An open list: its element, where its unfinished items start in `source`, its looseness. */
    this.list = null;
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

  clearTail() {
    for (const node of this.tail) node.remove();
    this.tail = [];
  }

  render(final) {
    if (this.code && this.growCode(final)) return;
    if (this.list && this.growList(final)) return;
    this.clearTail();
    const rest = this.source.slice(this.settled);
    const tokens = marked.lexer(rest);
    let open = tokens.length - 1;
    while (open > 0 && tokens[open].type === "space") open--;
    if (final) open = tokens.length;
    const done = tokens.slice(0, Math.max(open, 0));
    const raw = done.map((token) => token.raw).join("");
    // The lexer normalises some input (line endings); settle only when its tokens spell the text exactly.
    if (done.length > 0 && rest.startsWith(raw)) {
      this.container.append(...toNodes(marked.parser(done)));
      this.settled += raw.length;
    } else if (done.length > 0) {
      this.tail = toNodes(marked.parser(tokens));
      this.container.append(...this.tail);
      return;
    }
    const last = tokens[open];
    if (final || !last) return;
    if (this.openCode(last) || this.openList(last)) return;
    this.tail = toNodes(marked.parser([last]));
    this.container.append(...this.tail);
  }

  /** Start showing an open fenced code block line by line. False when `token` is not one. */
  openCode(token) {
    const fence = token.type === "code" ? FENCE.exec(token.raw)?.[1] : undefined;
    if (!fence) return false;
    const lines = token.raw.replace(/\n$/, "").split("\n");
    if (lines.length > 1 && closesFence(lines.at(-1), fence)) return false;
    const rest = this.source.slice(this.settled);
    if (!rest.startsWith(token.raw)) return false;
    const firstLine = rest.indexOf("\n");
    if (firstLine === -1) return false;
    const nodes = toNodes(marked.parser([{ ...token, text: "" }]));
    const code = nodes.map((node) => (node instanceof Element ? node.querySelector("code") : null)).find(Boolean);
    if (!code) return false;
    const shown = document.createTextNode("");
    const partial = document.createTextNode("");
    code.replaceChildren(shown, partial);
    this.code = { fence, nodes, lines: shown, partial, shown: this.settled + firstLine + 1, first: true };
    this.container.append(...nodes);
    return this.growCode(false);
  }

  /**
   * Add the new lines of the open code block to its text. False (and the code block is dropped, to be
   * rendered whole) once it has closed, or at the end of the answer.
   */
  growCode(final) {
    const code = this.code;
    let end;
    while (!final && (end = this.source.indexOf("\n", code.shown)) !== -1) {
      const line = this.source.slice(code.shown, end);
      if (closesFence(line, code.fence)) {
        final = true;
        break;
      }
      code.lines.appendData(code.first ? line : `\n${line}`);
      code.first = false;
      code.shown = end + 1;
    }
    if (final) {
      for (const node of code.nodes) node.remove();
      this.code = null;
      return false;
    }
    const partial = this.source.slice(code.shown);
    code.partial.data = partial && !code.first ? `\n${partial}` : partial;
    return true;
  }

  /** Keep an open list's finished items and render only its last one. False when `token` is not such a list. */
  openList(token) {
    if (token.type !== "list" || token.items.length < 2) return false;
    const rest = this.source.slice(this.settled);
    const before = token.items.slice(0, -1);
    const raw = before.map((item) => item.raw).join("");
    if (!rest.startsWith(raw)) return false;
    const element = listElement(toNodes(marked.parser([{ ...token, items: before }])));
    if (!element) return false;
    this.container.append(element);
    this.list = { element, start: this.settled + raw.length, loose: token.loose, mixed: false };
    this.tail = [itemNode(token, token.items.at(-1))];
    element.append(...this.tail);
    return true;
  }

  /**
   * The open list again, from its last unfinished item: items that are finished now join the list; the
   * last is rendered again. False (and the list is settled) once something follows the list, or at the
   * end of the answer.
   */
  growList(final) {
    const list = this.list;
    this.clearTail();
    const rest = this.source.slice(list.start);
    const tokens = marked.lexer(rest);
    const first = tokens[0];
    let open = tokens.length - 1;
    while (open > 0 && tokens[open].type === "space") open--;
    const ordered = list.element.nodeName === "OL";
    if (!first || first.type !== "list" || first.ordered !== ordered) {
      this.closeList(list.start);
      return false;
    }
    if (first.loose !== list.loose) list.mixed = true;
    const ended = final || open > 0;
    const finished = ended ? first.items : first.items.slice(0, -1);
    const raw = finished.map((item) => item.raw).join("");
    if (!rest.startsWith(raw)) {
      this.closeList(list.start);
      return false;
    }
    list.element.append(...finished.map((item) => itemNode(first, item)));
    list.start += raw.length;
    if (ended) {
      this.closeList(list.start - raw.length + first.raw.length);
      return false;
    }
    this.tail = [itemNode(first, first.items.at(-1))];
    list.element.append(...this.tail);
    return true;
  }

  /**
   * The list is over at `end`: settle it. When its items were rendered with different looseness (a
   * blank line between items made the list loose after its first items were kept), render it again whole.
   */
  closeList(end) {
    const list = this.list;
    this.list = null;
    if (list.mixed) {
      const whole = toNodes(marked.parser(marked.lexer(this.source.slice(this.settled, end))));
      list.element.replaceWith(...whole);
    }
    this.settled = end;
  }
}
