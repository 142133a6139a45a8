// The page's Markdown renderer: the supported syntax, and that nothing in the text becomes markup
// or a script link.
import assert from "node:assert/strict";
import { test } from "node:test";
import { escapeHtml, renderMarkdown } from "../../src/ui/public/markdown.js";

test("escapes HTML everywhere, code included", () => {
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  assert.equal(renderMarkdown("<img src=x onerror=alert(1)>"), "<p>&lt;img src=x onerror=alert(1)&gt;</p>");
  assert.equal(renderMarkdown("`<b>`"), "<p><code>&lt;b&gt;</code></p>");
  assert.equal(renderMarkdown("```html\n<script>x()</script>\n```"), '<pre><code class="language-html">&lt;script&gt;x()&lt;/script&gt;</code></pre>');
});

test("links: only http(s) and mailto become anchors, and their targets stay inside the attribute", () => {
  assert.equal(
    renderMarkdown("[docs](https://example.test/a?b=1&c=2)"),
    '<p><a href="https://example.test/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">docs</a></p>',
  );
  assert.equal(renderMarkdown("[x](javascript:alert(1))"), "<p>[x](javascript:alert(1))</p>");
  assert.equal(renderMarkdown("[x](data:text/html,hi)"), "<p>[x](data:text/html,hi)</p>");
  assert.ok(!renderMarkdown('[x](https://a.test/"onmouseover="alert(1))').includes('"onmouseover'));
});

test("block syntax: headings, lists, quotes, rules, fenced code, paragraphs with line breaks", () => {
  assert.equal(renderMarkdown("# Title\n## Sub ##"), "<h1>Title</h1>\n<h2>Sub</h2>");
  assert.equal(renderMarkdown("- a\n* b\n\n1. one\n2) two"), "<ul><li>a</li><li>b</li></ul>\n<ol><li>one</li><li>two</li></ol>");
  assert.equal(renderMarkdown("> quoted **bold**"), "<blockquote><p>quoted <strong>bold</strong></p></blockquote>");
  assert.equal(renderMarkdown("above\n\n---\n\nbelow"), "<p>above</p>\n<hr>\n<p>below</p>");
  assert.equal(renderMarkdown("line one\nline two\r\n\r\nnext"), "<p>line one<br>line two</p>\n<p>next</p>");
  assert.equal(renderMarkdown("```\nunterminated *x*"), "<pre><code>unterminated *x*</code></pre>");
});

test("inline syntax: bold, italic, strike, code; snake_case words stay as they are", () => {
  assert.equal(
    renderMarkdown("**b** __b__ *i* _i_ ~~s~~ `*not* italic`"),
    "<p><strong>b</strong> <strong>b</strong> <em>i</em> <em>i</em> <del>s</del> <code>*not* italic</code></p>",
  );
  assert.equal(renderMarkdown("call read_file_now and 2*3*4"), "<p>call read_file_now and 2<em>3</em>4</p>");
});
