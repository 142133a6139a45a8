// Completion webhooks' targets (src/background/webhook-target.ts): the URL checks at run creation,
// the address checks at send time (through an injected resolver), and the connection's lookup.
import assert from "node:assert/strict";
import { test } from "node:test";
import { allowedAddresses, checkWebhookUrl, guardedLookup, parseAddress, staticTarget, WebhookTargetRefused, type WebhookResolver } from "../../src/background/webhook-target.ts";
import { loadConfig } from "../../src/config/load.ts";
import { ServiceError } from "../../src/errors/service-error.ts";

const SECRET = "a-webhook-signing-secret-of-32-chars!";
const settings = (allowed: string[] = []) => ({ WEBHOOK_SIGNING_SECRET: SECRET, WEBHOOK_ALLOWED_HOSTS: allowed });

function refusedAt(url: string, allowed: string[] = []): string {
  try {
    checkWebhookUrl(url, settings(allowed));
  } catch (error) {
    assert.ok(error instanceof ServiceError, `${url}: a ServiceError`);
    assert.equal(error.kind, "validation_failed", url);
    return error.detail ?? "";
  }
  assert.fail(`${url} was accepted`);
}

const accepted = (url: string, allowed: string[] = []) => assert.doesNotThrow(() => checkWebhookUrl(url, settings(allowed)), url);

test("only http and https URLs without credentials, of a bounded length", () => {
  accepted("https://hooks.example.com/agenthost?token=abc");
  accepted("http://hooks.example.com:8443/path");
  assert.match(refusedAt("ftp://hooks.example.com/"), /scheme ftp is not http or https/);
  assert.match(refusedAt("file:///etc/passwd"), /scheme file/);
  assert.match(refusedAt("javascript:alert(1)"), /scheme javascript/);
  assert.match(refusedAt("/relative/path"), /not an absolute URL/);
  assert.match(refusedAt("not a url"), /not an absolute URL/);
  assert.match(refusedAt("https://user:pass@hooks.example.com/"), /credentials/);
  assert.match(refusedAt("https://user@hooks.example.com/"), /credentials/);
  assert.match(refusedAt(`https://hooks.example.com/${"a".repeat(2100)}`), /longer than 2048/);
});

test("the detail names the reason and the host, never the path or query", () => {
  const detail = refusedAt("http://127.0.0.1:9/secret-path?token=s3cr3t");
  assert.match(detail, /127\.0\.0\.1 is a loopback address/);
  assert.match(detail, /WEBHOOK_ALLOWED_HOSTS/);
  assert.doesNotMatch(detail, /secret-path|s3cr3t/);
});

test("IPv4 literals: loopback, private, link-local (metadata), unspecified and other non-public ranges are refused", () => {
  const cases: [string, RegExp][] = [
    ["127.0.0.1", /loopback/],
    ["127.255.1.2", /loopback/],
    ["10.1.2.3", /private/],
    ["172.16.0.1", /private/],
    ["172.31.255.255", /private/],
    ["192.168.1.1", /private/],
    ["169.254.169.254", /link-local/],
    ["0.0.0.0", /unspecified/],
    ["100.64.0.1", /carrier-grade/],
    ["192.0.2.1", /documentation/],
    ["198.18.0.1", /benchmarking/],
    ["224.0.0.1", /multicast/],
    ["255.255.255.255", /reserved/],
  ];
  for (const [host, reason] of cases) assert.match(refusedAt(`http://${host}/hook`), reason, host);
  for (const host of ["8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.0", "100.128.0.1", "11.0.0.1"]) accepted(`http://${host}/hook`);
});

test("IPv4 written oddly is read as the URL parser reads it", () => {
  assert.match(refusedAt("http://2130706433/"), /127\.0\.0\.1 is a loopback/);
  assert.match(refusedAt("http://0x7f.1/"), /loopback/);
  assert.match(refusedAt("http://0177.0.0.1/"), /loopback/);
  assert.match(refusedAt("http://0/"), /unspecified/);
});

test("IPv6 literals: loopback, unspecified, ULA, link-local, multicast, documentation, mapped and NAT64 forms", () => {
  const cases: [string, RegExp][] = [
    ["[::1]", /loopback/],
    ["[::]", /unspecified/],
    ["[fc00::1]", /unique local/],
    ["[fd12:3456::1]", /unique local/],
    ["[fe80::1]", /link-local/],
    ["[febf::1]", /link-local/],
    ["[ff02::1]", /multicast/],
    ["[2001:db8::1]", /documentation/],
    ["[::ffff:127.0.0.1]", /loopback/],
    ["[::ffff:7f00:1]", /loopback/],
    ["[::ffff:169.254.169.254]", /link-local/],
    ["[::ffff:10.0.0.1]", /private/],
    ["[64:ff9b::a00:1]", /private/],
    ["[::127.0.0.1]", /reserved/],
    ["[2002:7f00:1::]", /6to4/],
    ["[2001::1]", /IETF/],
  ];
  for (const [host, reason] of cases) assert.match(refusedAt(`http://${host}/hook`), reason, host);
  accepted("http://[2606:4700:4700::1111]/hook");
  accepted("http://[::ffff:8.8.8.8]/hook");
  accepted("http://[64:ff9b::808:808]/hook");
});

test("localhost names are refused before any lookup; other names wait for the send-time check", () => {
  assert.match(refusedAt("http://localhost:8080/"), /loopback name/);
  assert.match(refusedAt("http://api.localhost/"), /loopback name/);
  assert.match(refusedAt("http://LOCALHOST./"), /loopback name/);
  accepted("http://internal.corp/hook");
});

test("WEBHOOK_ALLOWED_HOSTS lets listed names, addresses and networks through", () => {
  accepted("http://127.0.0.1:9999/hook", ["127.0.0.1"]);
  accepted("http://127.0.0.1:9999/hook", ["127.0.0.0/8"]);
  accepted("http://[::ffff:127.0.0.1]/hook", ["127.0.0.1/32"]);
  accepted("http://[::1]/hook", ["::1"]);
  accepted("http://[fd00::5]/hook", ["[fd00::]/8"]);
  accepted("http://localhost/hook", ["localhost"]);
  accepted("http://10.2.3.4/hook", ["10.0.0.0/8"]);
  assert.match(refusedAt("http://10.2.3.4/hook", ["10.1.0.0/16"]), /private/);
  assert.match(refusedAt("http://127.0.0.2/hook", ["127.0.0.1"]), /loopback/);
});

test("webhooks need WEBHOOK_SIGNING_SECRET: refused 422 not_supported without it", () => {
  assert.throws(
    () => checkWebhookUrl("https://hooks.example.com/", { WEBHOOK_SIGNING_SECRET: undefined, WEBHOOK_ALLOWED_HOSTS: [] }),
    (error: unknown) => error instanceof ServiceError && error.kind === "not_supported" && /WEBHOOK_SIGNING_SECRET/.test(error.detail ?? ""),
  );
});

test("parseAddress reads IPv4, IPv6 (compressed, with an IPv4 tail, bracketed, with a zone) and maps ::ffff:a.b.c.d to IPv4", () => {
  assert.deepEqual(parseAddress("1.2.3.4"), { version: 4, value: 0x01020304n });
  assert.deepEqual(parseAddress("::ffff:1.2.3.4"), { version: 4, value: 0x01020304n });
  assert.deepEqual(parseAddress("[::1]"), { version: 6, value: 1n });
  assert.deepEqual(parseAddress("fe80::1%eth0"), { version: 6, value: (0xfe80n << 112n) | 1n });
  assert.deepEqual(parseAddress("1:2:3:4:5:6:7:8"), { version: 6, value: 0x00010002000300040005000600070008n });
  assert.deepEqual(parseAddress("1::8"), { version: 6, value: (1n << 112n) | 8n });
  assert.equal(parseAddress("example.com"), undefined);
  assert.equal(parseAddress("1.2.3"), undefined);
});

/** A resolver answering from a table, counting its calls. */
function resolver(table: Record<string, string[]>): WebhookResolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (hostname: string) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

test("at send time a name is checked on every address it resolves to", async () => {
  const resolve = resolver({
    "public.example": ["93.184.216.34", "2606:2800:220:1::1"],
    "rebind.example": ["127.0.0.1"],
    "metadata.example": ["169.254.169.254"],
    "mixed.example": ["10.0.0.5", "93.184.216.34"],
    "mapped.example": ["::ffff:192.168.0.1"],
    "ula.example": ["fd00::1"],
    "internal.corp": ["10.9.9.9"],
  });
  assert.deepEqual(await allowedAddresses("public.example", [], resolve), [
    { address: "93.184.216.34", family: 4 },
    { address: "2606:2800:220:1::1", family: 6 },
  ]);
  await assert.rejects(allowedAddresses("rebind.example", [], resolve), (e: unknown) => e instanceof WebhookTargetRefused && /rebind\.example resolves to a loopback address \(127\.0\.0\.1\)/.test(e.reason));
  await assert.rejects(allowedAddresses("metadata.example", [], resolve), /link-local/);
  await assert.rejects(allowedAddresses("mapped.example", [], resolve), /private/);
  await assert.rejects(allowedAddresses("ula.example", [], resolve), /unique local/);
  // A name with a public and a private address is reached only at the public one.
  assert.deepEqual(await allowedAddresses("mixed.example", [], resolve), [{ address: "93.184.216.34", family: 4 }]);
  // The operator's list: a network, or the name itself (trusted whatever it resolves to).
  assert.deepEqual(await allowedAddresses("rebind.example", ["127.0.0.0/8"], resolve), [{ address: "127.0.0.1", family: 4 }]);
  assert.deepEqual(await allowedAddresses("internal.corp", ["internal.corp"], resolve), [{ address: "10.9.9.9", family: 4 }]);
  // A literal address is checked without a lookup.
  const before = resolve.calls.length;
  await assert.rejects(allowedAddresses("[::1]", [], resolve), /loopback/);
  assert.deepEqual(await allowedAddresses("8.8.8.8", [], resolve), [{ address: "8.8.8.8", family: 4 }]);
  assert.equal(resolve.calls.length, before);
  // A name that does not resolve fails as a lookup (retried), not as a refusal.
  await assert.rejects(allowedAddresses("nowhere.example", [], resolve), (e: unknown) => !(e instanceof WebhookTargetRefused) && (e as { code?: string }).code === "ENOTFOUND");
});

test("the connection's lookup answers only checked addresses, in the form net asks for", async () => {
  const lookup = guardedLookup([], resolver({ "mixed.example": ["10.0.0.5", "93.184.216.34", "2606:2800:220:1::1"], "private.example": ["192.168.1.1"] }));
  const ask = (host: string, options: { all?: boolean; family?: number }) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) =>
      lookup(host, options, (err, address, family) => resolve({ err, address, family })),
    );
  assert.deepEqual(await ask("mixed.example", { all: true }), {
    err: null,
    address: [
      { address: "93.184.216.34", family: 4 },
      { address: "2606:2800:220:1::1", family: 6 },
    ],
    family: undefined,
  });
  assert.deepEqual(await ask("mixed.example", { family: 6 }), { err: null, address: "2606:2800:220:1::1", family: 6 });
  assert.deepEqual(await ask("mixed.example", {}), { err: null, address: "93.184.216.34", family: 4 });
  const refused = await ask("private.example", { all: true });
  assert.ok(refused.err instanceof WebhookTargetRefused);
});

test("staticTarget returns the parsed URL; a refusal is a WebhookTargetRefused", () => {
  assert.equal(staticTarget("https://Hooks.Example.com/x?y=1", []).hostname, "hooks.example.com");
  assert.throws(() => staticTarget("http://[::1]/", []), WebhookTargetRefused);
});

test("WEBHOOK_ALLOWED_HOSTS and WEBHOOK_SIGNING_SECRET are validated at startup", () => {
  const base = { AUTH_SECRET: "a-token-for-the-webhook-test" };
  const config = loadConfig({ ...base, WEBHOOK_ALLOWED_HOSTS: " 127.0.0.1 , 10.0.0.0/8, [::1], fd00::/8, Hooks.Internal " });
  assert.deepEqual(config.WEBHOOK_ALLOWED_HOSTS, ["127.0.0.1", "10.0.0.0/8", "[::1]", "fd00::/8", "hooks.internal"]);
  assert.equal(config.WEBHOOK_MAX_ATTEMPTS, 5);
  assert.equal(config.WEBHOOK_SIGNING_SECRET, undefined);
  for (const bad of ["10.0.0.0/33", "::1/129", "http://x", "a b", "10.0.0.0/8/1"]) {
    assert.throws(() => loadConfig({ ...base, WEBHOOK_ALLOWED_HOSTS: bad }), /WEBHOOK_ALLOWED_HOSTS/, bad);
  }
  assert.throws(() => loadConfig({ ...base, WEBHOOK_SIGNING_SECRET: "short" }), /WEBHOOK_SIGNING_SECRET/);
});
