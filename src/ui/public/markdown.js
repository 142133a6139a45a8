// A small Markdown renderer for the chat page. It escapes all HTML first and only then adds its own
// tags, so nothing an agent writes can become markup; links keep only http(s) and mailto targets.
// Supported: fenced code, headings, lists, block quotes, rules, paragraphs, `code`, **bold**,
// *italic*, ~~strike~~ and [links](https://...).

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** @param {string} text */
export function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[/** @type {keyof typeof ESCAPES} */ (c)]);
}

const FENCE = /^\s*(`{3,}|~{3,})\s*([\w+-]*)\s*$/;
const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*\d{1,9}[.)]\s+(.*)$/;
const QUOTE = /^\s*>\s?(.*)$/;
const RULE = /^\s*([-*_])(\s*\1){2,}\s*$/;

/**
 * Markdown to HTML that is safe to assign to innerHTML.
 * @param {string} source
 * @returns {string}
 */
export function renderMarkdown(source) {
  const lines = String(source).replace(/\uE000/g, "").replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let i = 0;
  const at = (n) => lines[n] ?? "";
  while (i < lines.length) {
    const line = at(i);
    const fence = FENCE.exec(line);
    if (fence) {
      const code = [];
      i += 1;
      while (i < lines.length && !at(i).trim().startsWith(fence[1] ?? "```")) code.push(at(i++));
      i += 1;
      const lang = fence[2] ? ` class="language-${escapeHtml(fence[2])}"` : "";
      out.push(`<pre><code${lang}>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    if (line.trim() === "") {
      i += 1;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = (heading[1] ?? "#").length;
      out.push(`<h${level}>${inline(heading[2] ?? "")}</h${level}>`);
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.push("<hr>");
      i += 1;
      continue;
    }
    const list = BULLET.test(line) ? ["ul", BULLET] : NUMBERED.test(line) ? ["ol", NUMBERED] : null;
    if (list) {
      const [tag, pattern] = /** @type {[string, RegExp]} */ (list);
      const items = [];
      while (i < lines.length && pattern.test(at(i))) items.push(`<li>${inline(pattern.exec(at(i++))?.[1] ?? "")}</li>`);
      out.push(`<${tag}>${items.join("")}</${tag}>`);
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted = [];
      while (i < lines.length && QUOTE.test(at(i))) quoted.push(QUOTE.exec(at(i++))?.[1] ?? "");
      out.push(`<blockquote>${renderMarkdown(quoted.join("\n"))}</blockquote>`);
      continue;
    }
    const paragraph = [];
    while (i < lines.length && at(i).trim() !== "" && !startsBlock(at(i))) paragraph.push(inline(at(i++)));
    if (paragraph.length === 0) paragraph.push(inline(at(i++)));
    out.push(`<p>${paragraph.join("<br>")}</p>`);
  }
  return out.join("\n");
}

/** @param {string} line */
function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || BULLET.test(line) || NUMBERED.test(line) || QUOTE.test(line);
}

/**
 * Inline spans of one line. Code spans are set aside first so nothing inside them is formatted.
 * @param {string} text
 */
function inline(text) {
  const kept = [];
  const keep = (html) => `\uE000${kept.push(html) - 1}\uE000`;
  let html = escapeHtml(text).replace(/`([^`]+)`/g, (_, code) => keep(`<code>${code}</code>`));
  html = html.replace(/\[([^\]]+)\]\(([^()\s]+)\)/g, (whole, label, href) =>
    /^(https?:\/\/|mailto:)/i.test(href)
      ? keep(`<a href="${href}" target="_blank" rel="noopener noreferrer">${label}</a>`)
      : whole,
  );
  html = html
    .replace(/\*\*(?=\S)(.+?)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=\S)(.+?)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/\*(?=[^\s*])(.+?)\*/g, "<em>$1</em>")
    .replace(/(^|[^\w])_(?=[^\s_])(.+?)_(?!\w)/g, "$1<em>$2</em>")
    .replace(/~~(?=\S)(.+?)~~/g, "<del>$1</del>");
  return html.replace(/\uE000(\d+)\uE000/g, (_, n) => kept[Number(n)] ?? "");
}
