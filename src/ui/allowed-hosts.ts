import { isIP } from "node:net";
import type { IncomingMessage } from "node:http";
import { canonicalHostName } from "../config/chat-ui.ts";

/** The names a browser uses for this machine itself, which no other site can be rebound to. */
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1"];

/** Listen addresses meaning every interface. */
const WILDCARDS = new Set(["0.0.0.0", "::"]);

/** A Host header (or an Origin's authority) taken apart: the canonical name and the port as written. */
export interface HostAndPort {
  readonly name: string;
  readonly port: string;
}

/**
 * `name[:port]` or `[ipv6][:port]`, as RFC 9110 writes a Host; undefined for anything else (empty,
 * userinfo, a path, percent-encoding, spaces, a second colon outside brackets, a port that is not 1 to
 * 5 digits).
 */
export function parseHost(value: string): HostAndPort | undefined {
  const match = /^(\[[^\]]*\]|[^:[\]]*)(?::(\d{1,5}))?$/.exec(value);
  if (!match) return undefined;
  const name = canonicalHostName(match[1]!);
  return name === undefined ? undefined : { name, port: match[2] ?? "" };
}

/**
 * Which Host a request may name: the defence against DNS rebinding. A site whose name is rebound to
 * this machine's address is same-origin with the page in the browser, but its requests still carry its
 * own name in Host, so only names this page is served under are answered: localhost, 127.0.0.1 and
 * [::1], the address it listens on, and CHAT_UI_ALLOWED_HOSTS. Listening on every interface (0.0.0.0,
 * ::), it also answers any IP address: an address cannot be rebound (the browser reached this machine
 * by number), and the machine's addresses are not the names people reach it by, which only
 * CHAT_UI_ALLOWED_HOSTS can say. Ports are not compared: the page may sit behind a proxy on another port.
 */
export class AllowedHosts {
  private readonly names: ReadonlySet<string>;
  private readonly anyAddress: boolean;

  constructor(listenHost: string, configured: readonly string[] = []) {
    const bound = canonicalHostName(listenHost);
    this.anyAddress = bound !== undefined && WILDCARDS.has(bound);
    const names = [...LOOPBACK_NAMES, ...configured];
    if (bound !== undefined && !this.anyAddress) names.push(bound);
    this.names = new Set(names);
  }

  /** Whether a name (canonical, as parseHost gives it) is one this page answers under. */
  allows(name: string): boolean {
    return this.names.has(name) || (this.anyAddress && isIP(name) !== 0);
  }

  /**
   * The request's Host when the page answers it; undefined when it is missing (an HTTP/1.0 request
   * without one: browsers always send it), repeated, malformed or not an allowed name, or when the
   * request target is not a path (the absolute form would name another host than Host).
   */
  hostOf(req: IncomingMessage): HostAndPort | undefined {
    if (!req.url?.startsWith("/")) return undefined;
    const values = req.headersDistinct.host;
    if (values?.length !== 1) return undefined;
    const host = parseHost(values[0]!);
    return host && this.allows(host.name) ? host : undefined;
  }

  /**
   * Whether an Origin header names this very page: http(s), an allowed name, and the same name and
   * port as the request's Host (a browser leaves the scheme's default port out of both).
   */
  allowsOrigin(origin: string, host: HostAndPort): boolean {
    const match = /^(https?):\/\/(.*)$/i.exec(origin);
    if (!match) return false;
    const from = parseHost(match[2]!);
    if (!from || !this.allows(from.name)) return false;
    const defaultPort = match[1]!.toLowerCase() === "https" ? "443" : "80";
    const port = (p: string) => (p === defaultPort ? "" : p);
    return from.name === host.name && port(from.port) === port(host.port);
  }
}
