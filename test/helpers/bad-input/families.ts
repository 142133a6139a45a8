import { gzipSync } from "node:zlib";
import { getAt, nodePaths, renderBody, setAt, splice, type Draft, type Key } from "./draft.ts";
import type { Operation } from "./operations.ts";
import type { Random } from "./random.ts";

/** What a mutation may look at besides the draft. */
export interface MutationContext {
  readonly operation: Operation;
  /** The methods /openapi.json allows on the operation's path. */
  readonly allowed: ReadonlySet<string>;
  readonly token: string;
  /** Tokens of AUTH_USERS users (alice first), when the service has any. */
  readonly userTokens: readonly string[];
  readonly maxBodyBytes: number;
}

/** A mutation edits the draft in place and says what it did. */
export type Mutation = (draft: Draft, context: MutationContext, random: Random) => string;

/**
 * Families that probe the HTTP layer (framing, encodings, Node's parser) rather than the service's
 * own validation, labelled by what they probe; their failures are reported under that label.
 */
export const HTTP_LAYER_FAMILIES: Readonly<Record<string, string>> = {
  "content-encoding": "HTTP layer (Content-Encoding)",
  "percent-encoding": "HTTP layer (percent-encoding)",
  parser: "HTTP layer (Node parser errors)",
  conditional: "HTTP layer (304 on API routes)",
  "incomplete-body": "HTTP layer (body-read timeout)",
};

const WRONG_TYPES: unknown[] = [0, -1, 1.5, true, false, "text", "", [], [1, "a"], {}, { k: "v" }];

function typeOf(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
}

/** A node of the body: any, or one accepted by `filter`; the root when nothing matches. */
function pickNode(draft: Draft, random: Random, filter: (value: unknown, path: Key[]) => boolean = () => true): Key[] {
  const paths = nodePaths(draft.body).filter((path) => filter(getAt(draft.body, path), path));
  return paths.length ? random.pick(paths) : [];
}

const isObject = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value);
const nonRoot = (_: unknown, path: Key[]) => path.length > 0;

function ensureBody(draft: Draft): void {
  if (!draft.hasBody) {
    draft.hasBody = true;
    draft.body = {};
    if (!draft.headers.some(([name]) => name.toLowerCase() === "content-type")) draft.headers.push(["Content-Type", "application/json"]);
  }
}

function replaceAt(draft: Draft, path: Key[], value: unknown): string {
  draft.body = setAt(draft.body, path, value);
  return path.join(".") || "(body)";
}

function setHeader(draft: Draft, name: string, value: string): void {
  draft.headers = draft.headers.filter(([n]) => n.toLowerCase() !== name.toLowerCase());
  draft.headers.push([name, value]);
}

function nestedText(depth: number, random: Random): string {
  const inner = random.pick(['"x"', "1", "{}", "[]", "null"]);
  const kind = random.pick(["object", "array", "mixed"] as const);
  let open = "";
  let close = "";
  for (let i = 0; i < depth; i++) {
    const object = kind === "object" || (kind === "mixed" && i % 2 === 0);
    open += object ? '{"a":' : "[";
    close = (object ? "}" : "]") + close;
  }
  return open + inner + close;
}

const BAD_STRINGS = [
  "\ud800",
  "\udc00x",
  "a\ud83d",
  "\u0000",
  "nul\u0000inside",
  "\u0007\u001b[31mred",
  "\u202eevil",
  "\ufeffbom",
  "\uffff\ufffe",
  "\u2028\u2029",
  "𝕳𝖊𝖑𝖑𝖔",
  "e\u0301\u0302\u0303\u0304",
  "%00%FF",
  "../../etc/passwd",
  "<script>alert(1)</script>",
  "'; DROP TABLE checkpoints;--",
  "${jndi:ldap://x/a}",
  "lat:v1:" + "0".repeat(64),
];

const BAD_BYTES = [
  Buffer.from([0xff]),
  Buffer.from([0xc0, 0x80]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xf4, 0x90, 0x80, 0x80]),
  Buffer.from([0xe2, 0x82]),
  Buffer.from([0x00]),
  Buffer.from([0x0a, 0x0d]),
];

const RAW_NUMBERS = ["1e400", "-1e400", "-0", "1e-400", "123456789012345678901234567890", "9007199254740993", "4294967296", "0.1e1", "1E3", "-1", "0", "2.5"];

const UNKNOWN_KEYS = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "", " ", "k".repeat(300), "ключ", "🔑", "$where", "__pregel_x", "thread_ts", "checkpoint_id", "type", "id"];

export const families: Record<string, Mutation> = {
  valid: () => "unchanged",

  "wrong-type": (draft, _context, random) => {
    ensureBody(draft);
    const path = pickNode(draft, random, nonRoot);
    const current = typeOf(getAt(draft.body, path));
    const value = random.pick(WRONG_TYPES.filter((v) => typeOf(v) !== current));
    return `${replaceAt(draft, path, value)} := ${JSON.stringify(value)}`;
  },

  null: (draft, _context, random) => {
    ensureBody(draft);
    return `${replaceAt(draft, pickNode(draft, random), null)} := null`;
  },

  "huge-string": (draft, context, random) => {
    ensureBody(draft);
    const length = random.weighted<number>([
      [10_000, 4],
      [100_000, 3],
      [600_000, 2],
      [Math.floor(context.maxBodyBytes * 0.9), 1],
    ]);
    const unit = random.pick(["a", "é", "🙂", "\u0000"]);
    const text = unit.repeat(Math.ceil(length / unit.length));
    const path = random.chance(0.8) ? pickNode(draft, random, (v) => typeof v === "string") : [...pickNode(draft, random, isObject), "huge"];
    return `${replaceAt(draft, path, text)} := ${unit} x ${length}`;
  },

  "deep-nesting": (draft, _context, random) => {
    ensureBody(draft);
    const depth = random.pick([31, 32, 33, 47, 48, 49, 50, 51, 64, 200, 5000, 100_000]);
    const path = random.chance(0.9) ? pickNode(draft, random, nonRoot) : [];
    return `${replaceAt(draft, path, splice(draft, nestedText(depth, random)))} := nested ${depth}`;
  },

  "unknown-field": (draft, _context, random) => {
    ensureBody(draft);
    const path = pickNode(draft, random, isObject);
    const key = random.pick(UNKNOWN_KEYS);
    const value = random.pick([...WRONG_TYPES, null]);
    return `${replaceAt(draft, [...path, key], value)} := ${JSON.stringify(value)}`;
  },

  "lc-marker": (draft, _context, random) => {
    ensureBody(draft);
    const marker = random.pick([
      { lc: 1, type: "secret", id: ["AUTH_SECRET"] },
      { lc: 1, type: "constructor", id: ["langchain_core", "messages", "HumanMessage"], kwargs: { content: "x" } },
      { lc: 1, type: "not_implemented", id: ["x"] },
      { lc: 2, type: "undefined" },
      { lc: 2, type: "constructor", id: ["RegExp"], method: null, args: ["(a+)+$", "g"] },
    ]);
    return `${replaceAt(draft, pickNode(draft, random, nonRoot), marker)} := lc marker ${marker.type}`;
  },

  "bad-unicode": (draft, _context, random) => {
    ensureBody(draft);
    const text = random.pick(BAD_STRINGS);
    if (random.chance(0.2)) {
      const path = pickNode(draft, random, isObject);
      return `${replaceAt(draft, [...path, text], "v")} (key) := ${JSON.stringify(text)}`;
    }
    const path = random.chance(0.7) ? pickNode(draft, random, (v) => typeof v === "string") : pickNode(draft, random, nonRoot);
    return `${replaceAt(draft, path, text)} := ${JSON.stringify(text)}`;
  },

  "raw-bytes": (draft, _context, random) => {
    ensureBody(draft);
    const bytes = random.pick(BAD_BYTES);
    const raw = Buffer.concat([Buffer.from('"ab'), bytes, Buffer.from('cd"')]);
    const path = pickNode(draft, random, (v) => typeof v === "string");
    return `${replaceAt(draft, path, splice(draft, raw))} := bytes ${bytes.toString("hex")}`;
  },

  numbers: (draft, _context, random) => {
    ensureBody(draft);
    const raw = random.pick(RAW_NUMBERS);
    const numeric = pickNode(draft, random, (v) => typeof v === "number");
    const path = numeric.length && random.chance(0.7) ? numeric : pickNode(draft, random, nonRoot);
    return `${replaceAt(draft, path, splice(draft, raw))} := ${raw}`;
  },

  "malformed-json": (draft, _context, random) => {
    ensureBody(draft);
    const text = (renderBody(draft) ?? Buffer.from("{}")).toString("utf8");
    const cut = random.int(0, Math.max(0, text.length - 1));
    const variants: Array<[string, string]> = [
      ["truncated", text.slice(0, cut)],
      ["trailing garbage", `${text}}`],
      ["two documents", `${text}${text}`],
      ["trailing comma", text.replace(/}$/, ",}")],
      ["single quotes", text.replace(/"/g, "'")],
      ["comment", `/* c */${text}`],
      ["NaN", text.replace(/:\s*[^,{}[\]]+/, ":NaN")],
      ["undefined", '{"input":undefined}'],
      ["BOM", `\ufeff${text}`],
      ["empty", ""],
      ["whitespace", "  \n\t "],
      ["unterminated string", '{"input":{"message":"abc'],
      ["unclosed arrays", "[".repeat(100_000)],
      ["control character", text.replace(/"([^"]*)"/, '"$1\u0001"')],
      ["duplicate keys", text.replace(/^\{/, '{"thread_id":1,')],
    ];
    const [name, body] = random.pick(variants);
    draft.rawBody = Buffer.from(body, "utf8");
    return name;
  },

  "body-shape": (draft, _context, random) => {
    ensureBody(draft);
    const body = random.pick(["null", "[]", "[1,2]", '"text"', "42", "true", "{}", "[{}]", '{"":""}']);
    draft.rawBody = Buffer.from(body);
    return body;
  },

  "oversize-body": (draft, context, random) => {
    ensureBody(draft);
    const extra = context.maxBodyBytes + random.int(1, 100_000);
    const path = pickNode(draft, random, isObject);
    return `${replaceAt(draft, [...path, "padding"], "p".repeat(extra))} := ${extra} bytes`;
  },

  "wrong-method": (draft, context, random) => {
    const method = random.pick(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"].filter((m) => !context.allowed.has(m)));
    draft.method = method;
    return method;
  },

  "bad-query": (draft, _context, random) => {
    const names = ["thread_id", "user_id", "limit", "offset", "unknown", "thread_id[]", "limit[a]", "__proto__", "thread_id[__proto__]"];
    const values = ["", "-1", "0", "abc", "1e3", "1.5", "99999999999999999999", "NaN", "Infinity", "0x10", "%201", "%00", "%C3%A9", "%E2%80%AE", "%ED%A0%80", "a".repeat(300), "a".repeat(6000), "%2F..%2F", "+", "%25"];
    const shape = random.pick(["set", "repeat", "drop", "bare", "noise"] as const);
    const name = random.pick(names);
    const value = random.pick(values);
    if (shape === "set") draft.query = [...draft.query.filter((q) => !q.startsWith(`${name}=`)), `${name}=${value}`];
    if (shape === "repeat") draft.query.push(`${name}=${value}`, `${name}=${random.pick(values)}`);
    if (shape === "drop") draft.query = draft.query.filter((q) => !q.startsWith("thread_id="));
    if (shape === "bare") draft.query.push(name);
    if (shape === "noise") draft.query.push(random.pick(["&&", "=", "==", "a=b=c", "%3D=%26", ";", "?x=1"]));
    return `${shape} ${name}=${value.slice(0, 40)}`;
  },

  path: (draft, _context, random) => {
    const agent = random.pick([
      "nope",
      "CHATBOT-AGENT",
      "chatbot-agent%20",
      ".",
      "..",
      "%2e%2e",
      "a".repeat(2000),
      "info",
      "health",
      "docs",
      "%F0%9F%99%82",
      "chatbot-agent%2Finvoke",
      "__proto__",
      "constructor",
    ]);
    const edits: Array<[string, (path: string) => string]> = [
      ["unknown agent", (p) => `/${agent}${p.replace(/^\/[^/]+(?=\/(invoke|stream|history|feedback|resume))/, "")}`],
      ["trailing slash", (p) => `${p}/`],
      ["double slash", (p) => p.replace(/^\//, "//")],
      ["extra segment", (p) => `${p}/extra`],
      ["upper case", (p) => p.toUpperCase()],
      ["matrix parameter", (p) => `${p};jsessionid=1`],
      ["dot segment", (p) => `/.${p}`],
      ["dot-dot", (p) => `${p}/../info`],
      ["fragment", (p) => `${p}#frag`],
      ["duplicated agent", (p) => `/chatbot-agent${p}`],
    ];
    const [name, edit] = random.pick(edits);
    draft.path = edit(draft.path);
    return name;
  },

  auth: (draft, context, random) => {
    const user = context.userTokens[0];
    const variants: Array<[string, string | undefined]> = [
      ["none", undefined],
      ["wrong token", "Bearer wrong-token"],
      ["basic", "Basic dXNlcjpwYXNz"],
      ["scheme only", "Bearer"],
      ["two spaces", `Bearer  ${context.token}`],
      ["lower-case scheme", `bearer ${context.token}`],
      ["suffix", `Bearer ${context.token}x`],
      ["long", `Bearer ${"t".repeat(8000)}`],
      ["token only", context.token],
    ];
    if (user) variants.push(["user token", `Bearer ${user}`]);
    const [name, value] = random.pick(variants);
    draft.headers = draft.headers.filter(([n]) => n.toLowerCase() !== "authorization");
    if (value !== undefined) draft.headers.push(["Authorization", value]);
    if (name === "user token" && draft.hasBody && isObject(draft.body) && random.chance(0.5)) draft.body = { ...(draft.body as object), user_id: "bob" };
    return name;
  },

  headers: (draft, _context, random) => {
    const variants: Array<[string, () => void]> = [
      ["text/plain", () => setHeader(draft, "Content-Type", "text/plain")],
      ["form", () => setHeader(draft, "Content-Type", "application/x-www-form-urlencoded")],
      ["multipart", () => setHeader(draft, "Content-Type", "multipart/form-data; boundary=xyz")],
      ["utf-16", () => setHeader(draft, "Content-Type", "application/json; charset=utf-16le")],
      ["latin1", () => setHeader(draft, "Content-Type", "application/json; charset=latin1")],
      ["unknown charset", () => setHeader(draft, "Content-Type", "application/json; charset=klingon")],
      ["bad media type", () => setHeader(draft, "Content-Type", "application/json, text/plain;;")],
      ["no content-type", () => (draft.headers = draft.headers.filter(([n]) => n.toLowerCase() !== "content-type"))],
      ["accept html", () => setHeader(draft, "Accept", "text/html")],
      ["accept sse", () => setHeader(draft, "Accept", "text/event-stream")],
      ["odd request id", () => setHeader(draft, "X-Request-Id", "../../x\u00ff".repeat(3))],
      ["expect continue", () => setHeader(draft, "Expect", "100-continue")],
      ["range", () => setHeader(draft, "Range", "bytes=0-10")],
      ["keep-alive", () => setHeader(draft, "Connection", "keep-alive, close")],
      ["many headers", () => Array.from({ length: 200 }, (_, i) => draft.headers.push([`X-Noise-${i}`, "v"]))],
      ["forwarded", () => setHeader(draft, "X-Forwarded-For", "::1, <script>, 999.1.1.1")],
      ["cookie", () => setHeader(draft, "Cookie", "a=b; c")],
      [
        "chunked body",
        () => {
          const body = renderBody(draft) ?? Buffer.alloc(0);
          draft.rawBody = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from("\r\n0\r\n\r\n")].filter((b) => b.length));
          if (body.length === 0) draft.rawBody = Buffer.from("0\r\n\r\n");
          draft.contentLength = false;
          setHeader(draft, "Transfer-Encoding", "chunked");
        },
      ],
      ["empty body with length 0", () => ((draft.rawBody = Buffer.alloc(0)), (draft.hasBody = true))],
    ];
    const [name, apply] = random.pick(variants);
    apply();
    return name;
  },

  "content-encoding": (draft, _context, random) => {
    ensureBody(draft);
    const body = renderBody(draft) ?? Buffer.from("{}");
    const variants: Array<[string, string, Buffer]> = [
      ["gzip, not gzipped", "gzip", body],
      ["deflate, junk", "deflate", Buffer.from("junk")],
      ["br, junk", "br", Buffer.from([1, 2, 3, 4])],
      ["gzip, valid", "gzip", gzipSync(body)],
      ["gzip, truncated", "gzip", gzipSync(body).subarray(0, 12)],
      ["identity", "identity", body],
      ["unknown", "x-unknown", body],
      ["gzip twice, once applied", "gzip, gzip", gzipSync(body)],
    ];
    const [name, encoding, bytes] = random.pick(variants);
    setHeader(draft, "Content-Encoding", encoding);
    draft.rawBody = bytes;
    return name;
  },

  "percent-encoding": (draft, _context, random) => {
    const bad = random.pick(["%FF", "%", "%zz", "%C0%80", "%E0%80", "%ED%A0%80", "%%", "%0"]);
    draft.path = random.chance(0.5) ? draft.path.replace(/^\/[^/]+/, `/${bad}`) : `${draft.path}${bad}`;
    return bad;
  },

  parser: (draft, _context, random) => {
    const variants: Array<[string, () => void]> = [
      ["lower-case method", () => (draft.method = draft.method.toLowerCase())],
      ["unknown method", () => (draft.method = "FROB")],
      ["CONNECT", () => (draft.method = "CONNECT")],
      ["space before colon", () => draft.headers.push(["X-Bad ", "v"])],
      ["NUL in header", () => draft.headers.push(["X-Bad", "a\u0000b"])],
      ["bare CR in header", () => draft.headers.push(["X-Bad", "a\rb"])],
      ["huge header", () => draft.headers.push(["X-Huge", "h".repeat(20_000)])],
      ["bad content-length", () => ((draft.contentLength = false), draft.headers.push(["Content-Length", "abc"]))],
      ["two content-lengths", () => draft.headers.push(["Content-Length", "1"])],
      ["length and chunked", () => draft.headers.push(["Transfer-Encoding", "chunked"])],
      ["unknown expectation", () => draft.headers.push(["Expect", "teapot"])],
      ["HTTP/9.9", () => (draft.version = "HTTP/9.9")],
      ["raw space in target", () => (draft.path = `${draft.path} x`)],
      ["latin1 byte in target", () => (draft.path = `${draft.path}\u00ff`)],
      ["invalid chunk size", () => ((draft.contentLength = false), draft.headers.push(["Transfer-Encoding", "chunked"]), (draft.rawBody = Buffer.from("zz\r\n{}\r\n0\r\n\r\n")))],
    ];
    const [name, apply] = random.pick(variants);
    apply();
    return name;
  },

  conditional: (draft, _context, random) => {
    const [name, value] = random.pick([
      ["If-None-Match", "*"],
      ["If-None-Match", '"abc"'],
      ["If-Modified-Since", "Sat, 01 Jan 2100 00:00:00 GMT"],
      ["If-Match", '"nope"'],
      ["If-Unmodified-Since", "Thu, 01 Jan 1970 00:00:00 GMT"],
    ] as const);
    setHeader(draft, name, value);
    return `${name}: ${value}`;
  },

  /** A body that is announced but never finished: only the body-read timeout can end it. */
  "incomplete-body": (draft, _context, random) => {
    ensureBody(draft);
    const body = renderBody(draft) ?? Buffer.from("{}");
    if (random.chance(0.5)) {
      draft.contentLength = false;
      draft.headers.push(["Content-Length", String(body.length + 1000)]);
      draft.rawBody = body;
      return "short of its Content-Length";
    }
    draft.contentLength = false;
    draft.headers.push(["Transfer-Encoding", "chunked"]);
    draft.rawBody = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from("\r\n")]);
    return "chunked without its last chunk";
  },
};

/** How often each family is drawn in a campaign (incomplete-body runs apart; see campaign.ts). */
export const FAMILY_WEIGHTS: ReadonlyArray<readonly [string, number]> = [
  ["valid", 14],
  ["wrong-type", 8],
  ["null", 4],
  ["huge-string", 3],
  ["deep-nesting", 6],
  ["unknown-field", 6],
  ["lc-marker", 2],
  ["bad-unicode", 6],
  ["raw-bytes", 3],
  ["numbers", 4],
  ["malformed-json", 6],
  ["body-shape", 3],
  ["oversize-body", 1],
  ["wrong-method", 5],
  ["bad-query", 6],
  ["path", 5],
  ["auth", 5],
  ["headers", 6],
  ["content-encoding", 2],
  ["percent-encoding", 2],
  ["parser", 3],
  ["conditional", 2],
];
