import net from "node:net";
import type { AddressInfo } from "node:net";

interface Pair {
  readonly client: net.Socket;
  upstream?: net.Socket;
  /** Bytes held during a blackhole, per direction, delivered on restore. */
  readonly toUpstream: Buffer[];
  readonly toClient: Buffer[];
  /** Close both sides and forget the pair. */
  drop(): void;
}

/**
 * A loopback TCP proxy the test can cut and restore, to make a real server unreachable for the
 * service without touching the server itself. Three kinds of outage:
 *
 * - `stop()`: the port is closed (new connections refused) and every open connection is reset;
 * - `reset()`: every open connection is reset, new ones are still accepted;
 * - `blackhole()`: dropped packets. Connections stay open and new ones are accepted, but no byte
 *   passes in either direction; `restore()` lets the held bytes through, as a healed network would.
 *   `heldBytes` counts what the blackhole swallowed, so a test can wait until a request is stuck.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly pairs = new Set<Pair>();
  private holding = false;
  port = 0;
  /** Connections accepted since the proxy was made. */
  accepted = 0;
  /** Bytes held back by blackholes since the proxy was made. */
  heldBytes = 0;

  constructor(private readonly targetPort: number, private readonly targetHost = "127.0.0.1") {}

  async start(port = this.port): Promise<number> {
    this.server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server!.listen(port, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this.port;
  }

  private accept(client: net.Socket): void {
    this.accepted++;
    const pair: Pair = {
      client,
      toUpstream: [],
      toClient: [],
      drop: () => {
        this.pairs.delete(pair);
        client.destroy();
        pair.upstream?.destroy();
      },
    };
    this.pairs.add(pair);
    client.on("error", pair.drop);
    client.on("close", pair.drop);
    client.on("data", (chunk: Buffer) => this.pass(chunk, pair.toUpstream, pair.upstream));
    if (!this.holding) this.connect(pair);
  }

  private connect(pair: Pair): void {
    const upstream = net.connect(this.targetPort, this.targetHost);
    pair.upstream = upstream;
    upstream.on("error", pair.drop);
    upstream.on("close", pair.drop);
    upstream.on("data", (chunk: Buffer) => this.pass(chunk, pair.toClient, pair.client));
    for (const chunk of pair.toUpstream.splice(0)) upstream.write(chunk);
  }

  /** Forward a chunk, or hold it while blackholed (or while the upstream is not there yet). */
  private pass(chunk: Buffer, held: Buffer[], to: net.Socket | undefined): void {
    if (this.holding || !to) {
      if (this.holding) this.heldBytes += chunk.length;
      held.push(chunk);
      return;
    }
    to.write(chunk);
  }

  /** Refuse new connections and cut every open one. */
  async stop(): Promise<void> {
    this.holding = false;
    this.reset();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }

  /** Cut every open connection (the peers see a reset); keep accepting new ones. */
  reset(): void {
    for (const { client, upstream } of this.pairs) {
      client.resetAndDestroy();
      upstream?.resetAndDestroy();
    }
    this.pairs.clear();
  }

  /** Pass nothing, in either direction, on open and new connections, without closing any. */
  blackhole(): void {
    this.holding = true;
  }

  /** End a blackhole: held bytes and connections go through. (After `stop()`, use `start()`.) */
  restore(): void {
    if (!this.holding) return;
    this.holding = false;
    for (const pair of this.pairs) {
      if (!pair.upstream) {
        this.connect(pair);
        continue;
      }
      for (const chunk of pair.toUpstream.splice(0)) pair.upstream.write(chunk);
      for (const chunk of pair.toClient.splice(0)) pair.client.write(chunk);
    }
  }
}
