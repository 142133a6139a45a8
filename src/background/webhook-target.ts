import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupFunction } from "node:net";
import { isIP } from "node:net";
import type { Config } from "../config/schema.ts";
import { ServiceError } from "../errors/service-error.ts";

/**
 * Where a background run's completion webhook may go. A run's `webhook` is a URL its caller chose,
 * and the server calls it: without limits, any caller could make the server reach its own loopback,
 * the private network behind it or the cloud metadata endpoint (169.254.169.254). So only http and
 * https URLs without credentials are taken, and only public addresses are called, unless the
 * operator lists a host name, address or network in WEBHOOK_ALLOWED_HOSTS.
 *
 * The checks run twice: on the URL alone when the run is created (`checkWebhookUrl`: scheme,
 * credentials, a literal address or `localhost`), and on every address the host name resolves to
 * when the webhook is sent (`resolveWebhookTarget`, and `guardedLookup` on the connection itself, so
 * the connection goes to an address that was checked and a name that resolves differently a second
 * time (DNS rebinding) gains nothing).
 */

export type WebhookTargetSettings = Pick<Config, "WEBHOOK_SIGNING_SECRET" | "WEBHOOK_ALLOWED_HOSTS">;

/** What a host name resolves to (dns.lookup's `all: true` answer). Injected in tests. */
export type WebhookResolver = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

export const systemResolver: WebhookResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** The longest webhook URL accepted. */
export const WEBHOOK_URL_MAX_LENGTH = 2048;

/** A webhook target refused: the URL, or every address its host resolves to. Never retried. */
export class WebhookTargetRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "WebhookTargetRefused";
  }
}

/** An IP address as a number, with its version (an IPv4-mapped IPv6 address is its IPv4 address). */
interface Address {
  readonly version: 4 | 6;
  readonly value: bigint;
}

/** A block of addresses: `base/prefix`. */
interface Block {
  readonly version: 4 | 6;
  readonly base: bigint;
  readonly prefix: number;
}

function parseIPv4(text: string): bigint {
  return text.split(".").reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n);
}

/** An IPv6 address (valid per net.isIP, without a zone) as a 128-bit number. */
function parseIPv6(text: string): bigint {
  let groups: string[];
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  let body = text;
  let low: bigint | undefined;
  if (tail) {
    low = parseIPv4(tail[1]!);
    body = text.slice(0, -tail[1]!.length) + "0:0";
  }
  const [head, rest] = body.split("::");
  if (rest === undefined) groups = head!.split(":");
  else {
    const left = head ? head.split(":") : [];
    const right = rest ? rest.split(":") : [];
    groups = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  }
  let value = groups.reduce((acc, group) => (acc << 16n) | BigInt(parseInt(group, 16)), 0n);
  if (low !== undefined) value = (value & ~0xffffffffn) | low;
  return value;
}

/**
 * The address `text` names, or undefined when it is not an IP address. An IPv6 zone (`fe80::1%eth0`)
 * is dropped; an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is its IPv4 address.
 */
export function parseAddress(text: string): Address | undefined {
  const bare = text.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
  const version = isIP(bare);
  if (version === 4) return { version: 4, value: parseIPv4(bare) };
  if (version !== 6) return undefined;
  const value = parseIPv6(bare);
  if (value >> 32n === 0xffffn) return { version: 4, value: value & 0xffffffffn };
  return { version: 6, value };
}

function block(text: string): Block {
  const [address, prefix] = text.split("/");
  const parsed = parseAddress(address!)!;
  const bits = parsed.version === 4 ? 32 : 128;
  const length = prefix === undefined ? bits : Number(prefix);
  return { version: parsed.version, base: parsed.value, prefix: length };
}

function within(address: Address, range: Block): boolean {
  if (address.version !== range.version) return false;
  const bits = BigInt(address.version === 4 ? 32 : 128);
  const shift = bits - BigInt(range.prefix);
  return address.value >> shift === range.base >> shift;
}

/**
 * Addresses that are not public, each with what it is (IANA's special-purpose registries). IPv6
 * outside 2000::/3 (global unicast) is refused whole; these are the exceptions inside it and the
 * IPv4 ranges.
 */
const NON_PUBLIC: readonly (readonly [string, string])[] = [
  ["0.0.0.0/8", "an unspecified (this-network) address"],
  ["10.0.0.0/8", "a private address"],
  ["100.64.0.0/10", "a shared (carrier-grade NAT) address"],
  ["127.0.0.0/8", "a loopback address"],
  ["169.254.0.0/16", "a link-local address (cloud metadata)"],
  ["172.16.0.0/12", "a private address"],
  ["192.0.0.0/24", "an IETF protocol address"],
  ["192.0.2.0/24", "a documentation address"],
  ["192.88.99.0/24", "a 6to4 relay address"],
  ["192.168.0.0/16", "a private address"],
  ["198.18.0.0/15", "a benchmarking address"],
  ["198.51.100.0/24", "a documentation address"],
  ["203.0.113.0/24", "a documentation address"],
  ["224.0.0.0/4", "a multicast address"],
  ["240.0.0.0/4", "a reserved address"],
  ["2001::/23", "an IETF protocol address (Teredo, ORCHID, …)"],
  ["2001:db8::/32", "a documentation address"],
  ["2002::/16", "a 6to4 address"],
  ["3fff::/20", "a documentation address"],
];
const NON_PUBLIC_BLOCKS = NON_PUBLIC.map(([range, what]) => ({ range: block(range), what }));

const GLOBAL_UNICAST = block("2000::/3");
const NAT64 = block("64:ff9b::/96");

/** What makes `address` not public; undefined for a public address. */
function nonPublic(address: Address): string | undefined {
  if (address.version === 6) {
    // The well-known NAT64 prefix reaches the IPv4 address in its last 32 bits.
    if (within(address, NAT64)) return nonPublic({ version: 4, value: address.value & 0xffffffffn });
    if (address.value === 0n) return "an unspecified address";
    if (address.value === 1n) return "a loopback address";
    if (!within(address, GLOBAL_UNICAST)) {
      if (address.value >> 121n === 0x7en) return "a unique local (private) address";
      if (address.value >> 118n === 0x3fan) return "a link-local address";
      if (address.value >> 120n === 0xffn) return "a multicast address";
      return "a reserved IPv6 address";
    }
  }
  return NON_PUBLIC_BLOCKS.find(({ range }) => within(address, range))?.what;
}

/** WEBHOOK_ALLOWED_HOSTS as names and blocks. */
interface AllowList {
  readonly names: ReadonlySet<string>;
  readonly blocks: readonly Block[];
}

const allowLists = new WeakMap<readonly string[], AllowList>();

function allowListOf(entries: readonly string[]): AllowList {
  let list = allowLists.get(entries);
  if (!list) {
    const names = new Set<string>();
    const blocks: Block[] = [];
    for (const entry of entries) {
      const bare = entry.replace(/^\[(.*)\]$/, "$1");
      if (parseAddress(bare.split("/")[0]!)) blocks.push(block(bare));
      else names.add(bare.toLowerCase().replace(/\.$/, ""));
    }
    list = { names, blocks };
    allowLists.set(entries, list);
  }
  return list;
}

/** Why `address` may not be called (undefined: it may), given the operator's allow list. */
function refusalOf(address: Address, allow: AllowList): string | undefined {
  const what = nonPublic(address);
  if (what === undefined || allow.blocks.some((range) => within(address, range))) return undefined;
  return what;
}

const hostNameOf = (url: URL) => url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "");

const NOT_ALLOWED = "is not allowed (WEBHOOK_ALLOWED_HOSTS lists the hosts and networks that are)";

/**
 * The URL alone, as sent: an http or https URL of at most WEBHOOK_URL_MAX_LENGTH characters, without
 * credentials, whose host is not `localhost` (or under `.localhost`) nor a non-public literal address,
 * unless WEBHOOK_ALLOWED_HOSTS lists it. Returns the parsed URL; throws WebhookTargetRefused naming
 * the reason (never the URL's path or query, which may hold a token).
 */
export function staticTarget(raw: string, allowedHosts: readonly string[]): URL {
  if (raw.length > WEBHOOK_URL_MAX_LENGTH) throw new WebhookTargetRefused(`the URL is longer than ${WEBHOOK_URL_MAX_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookTargetRefused("it is not an absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new WebhookTargetRefused(`its scheme ${url.protocol.slice(0, -1).slice(0, 20)} is not http or https`);
  if (url.username || url.password) throw new WebhookTargetRefused("it carries credentials (user:password@); put a token in the path or query instead");
  const allow = allowListOf(allowedHosts);
  const host = hostNameOf(url);
  if (allow.names.has(host)) return url;
  const literal = parseAddress(host);
  if (literal) {
    const refused = refusalOf(literal, allow);
    if (refused) throw new WebhookTargetRefused(`its host ${host} is ${refused}, which ${NOT_ALLOWED}`);
  } else if (host === "localhost" || host.endsWith(".localhost")) {
    throw new WebhookTargetRefused(`its host ${host} is a loopback name, which ${NOT_ALLOWED}`);
  }
  return url;
}

/**
 * Check a run's `webhook` when the run is created, before anything is stored: WEBHOOK_SIGNING_SECRET
 * must be set (422 not_supported: this service signs every webhook, and does not send unsigned
 * ones), and the URL must pass `staticTarget` (422 validation_failed naming the reason). The host's
 * addresses are checked again when the webhook is sent.
 */
export function checkWebhookUrl(url: string, settings: WebhookTargetSettings): void {
  if (!settings.WEBHOOK_SIGNING_SECRET) {
    throw new ServiceError("not_supported", { detail: "webhook needs WEBHOOK_SIGNING_SECRET, which this service does not have: it sends only signed webhooks." });
  }
  try {
    staticTarget(url, settings.WEBHOOK_ALLOWED_HOSTS);
  } catch (error) {
    if (!(error instanceof WebhookTargetRefused)) throw error;
    throw new ServiceError("validation_failed", { detail: `webhook is refused: ${error.reason}.` });
  }
}

/** An address a webhook may connect to. */
export interface CheckedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/**
 * The addresses `hostname` may be reached at, now: the name's addresses (through `resolve`), each
 * checked, those refused left out. A literal address is checked as it is; a name WEBHOOK_ALLOWED_HOSTS
 * lists is trusted whatever it resolves to. Throws WebhookTargetRefused when none is left (a name that
 * resolves to a public and a private address is reached only at the public one).
 */
export async function allowedAddresses(hostname: string, allowedHosts: readonly string[], resolve: WebhookResolver): Promise<CheckedAddress[]> {
  const host = hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "");
  const allow = allowListOf(allowedHosts);
  const literal = parseAddress(host);
  const answers = literal ? [{ address: host, family: isIP(host) }] : await resolve(host);
  const trusted = allow.names.has(host);
  const out: CheckedAddress[] = [];
  let refused: string | undefined;
  for (const answer of answers) {
    const address = parseAddress(answer.address);
    if (!address) continue;
    const why = trusted ? undefined : refusalOf(address, allow);
    if (why) refused ??= `${host} resolves to ${why} (${answer.address}), which ${NOT_ALLOWED}`;
    else out.push({ address: answer.address, family: isIP(answer.address) === 6 ? 6 : 4 });
  }
  if (out.length === 0) throw new WebhookTargetRefused(refused ?? `${host} resolves to no address`);
  return out;
}

/**
 * A `lookup` for net.connect / tls.connect (an undici Agent's `connect.lookup`) that answers only
 * addresses `allowedAddresses` lets through, so the socket connects to an address that was checked.
 * Node skips the lookup for a literal address: the sender checks those itself before each attempt.
 */
export function guardedLookup(allowedHosts: readonly string[], resolve: WebhookResolver): LookupFunction {
  return (hostname, options, callback) => {
    allowedAddresses(hostname, allowedHosts, resolve).then(
      (addresses) => {
        const family = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
        const usable = family === 0 ? addresses : addresses.filter((a) => a.family === family);
        if (usable.length === 0) {
          callback(Object.assign(new Error(`${hostname} has no allowed IPv${family} address`), { code: "ENOTFOUND" }), "", 4);
          return;
        }
        if (options.all) callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (error: unknown) => callback(error as NodeJS.ErrnoException, "", 4),
    );
  };
}
