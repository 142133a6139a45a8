// Types for the page's plain-JavaScript Markdown renderer, so tests can import it.
export function escapeHtml(text: string): string;
export function renderMarkdown(source: string): string;
