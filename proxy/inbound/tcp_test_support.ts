/**
 * Helpers for the inbound TCP tests: a TCP application that records what it receives, raw plain and
 * mutual-TLS clients, and a listener in front of the application with a mutable snapshot. Not used
 * by the proxy itself.
 *
 * @module
 */
import net from "node:net";
import tls from "node:tls";
import { createHash } from "node:crypto";
import { InboundListener } from "./listener.ts";
import type { InboundStats } from "./observer.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { RecordingLog, type TestCa, type TestLeaf } from "./test_support.ts";
import { IstioTcpMetrics } from "../tcp/tcp_metrics.ts";
import { MESH_TCP_ALPN } from "../tls/mesh_alpn.ts";
export { collect, type Received, sha256Hex } from "../tcp/test_support.ts";

/**
 * A TCP application on 127.0.0.1: echoes every byte; after the client's FIN it writes
 * `\nsha256:<hex of all bytes received>` and ends (so a half-close is visible); answers a request that
 * starts with `GET ` with an HTTP/1.1 200 (`http path`) instead; sends `greeting` first when set, and with
 * `greetAndEnd` ends its side right after it (a server that half-closes first; it then only counts).
 */
export class TcpApp {
  readonly server: net.Server;
  /** Connections accepted. */
  accepted = 0;
  /** Bytes received, over all connections. */
  received = 0;
  /** The first bytes of each connection (up to 64). */
  readonly firstBytes: Uint8Array[] = [];
  port = 0;
  readonly #open = new Set<net.Socket>();

  constructor(readonly greeting?: string, readonly greetAndEnd = false) {
    this.server = net.createServer({ allowHalfOpen: true }, (s) => this.#serve(s));
  }

  static async start(greeting?: string, greetAndEnd = false): Promise<TcpApp> {
    const app = new TcpApp(greeting, greetAndEnd);
    await new Promise<void>((r) => app.server.listen(0, "127.0.0.1", r));
    app.port = (app.server.address() as net.AddressInfo).port;
    return app;
  }

  #serve(s: net.Socket): void {
    this.accepted++;
    this.#open.add(s);
    s.on("close", () => this.#open.delete(s));
    s.on("error", () => {});
    const hash = createHash("sha256");
    let first = true;
    if (this.greeting !== undefined) s.write(this.greeting);
    if (this.greetAndEnd) s.end();
    s.on("data", (chunk: Uint8Array) => {
      this.received += chunk.length;
      if (first) {
        first = false;
        this.firstBytes.push(chunk.slice(0, 64));
        if (new TextDecoder().decode(chunk.subarray(0, 4)) === "GET ") {
          s.end("HTTP/1.1 200 OK\r\ncontent-length: 9\r\nconnection: close\r\n\r\nhttp path");
          return;
        }
      }
      hash.update(chunk);
      if (!s.writableEnded) s.write(chunk);
    });
    s.on("end", () => {
      if (!s.writableEnded) s.end(`\nsha256:${hash.digest("hex")}`);
    });
  }

  async close(): Promise<void> {
    for (const s of this.#open) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** A plain-text client (half-open allowed). */
export function plainClient(port: number): net.Socket {
  return net.connect({ host: "127.0.0.1", port, allowHalfOpen: true });
}

/**
 * A mutual-TLS client with `leaf`, verifying the proxy against `ca` (half-open allowed), offering a
 * mesh sidecar's TCP ALPN (../tls/mesh_alpn.ts) unless `alpn` says otherwise.
 */
export function mtlsClient(
  port: number,
  ca: TestCa,
  leaf: TestLeaf,
  alpn: readonly string[] = MESH_TCP_ALPN,
): tls.TLSSocket {
  return tls.connect({
    ALPNProtocols: [...alpn],
    socket: net.connect({ host: "127.0.0.1", port, allowHalfOpen: true }),
    ca: ca.pem,
    cert: leaf.certPem,
    key: leaf.keyPem,
    checkServerIdentity: () => undefined,
  });
}

/** An inbound listener in front of a fresh {@link TcpApp}. */
export interface TcpProxy {
  app: TcpApp;
  listener: InboundListener;
  port: number;
  stats: InboundStats;
  metrics: IstioTcpMetrics;
  log: RecordingLog;
  set(s: RuntimeSnapshot): void;
}

/** Runs `fn` with a listener whose snapshot is `initial(appPort)`, then closes everything. */
export async function withTcpProxy(
  initial: (appPort: number) => RuntimeSnapshot,
  fn: (p: TcpProxy) => Promise<void>,
  opts: { greeting?: string; greetAndEnd?: boolean } = {},
): Promise<void> {
  const app = await TcpApp.start(opts.greeting, opts.greetAndEnd);
  let snapshot = initial(app.port);
  const log = new RecordingLog();
  const metrics = new IstioTcpMetrics();
  const listener = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort: app.port,
    snapshot: () => snapshot,
    log,
    tcpMetrics: metrics,
  });
  await listener.start();
  try {
    await fn({
      app,
      listener,
      port: listener.port,
      stats: listener.observer as InboundStats,
      metrics,
      log,
      set: (s) => (snapshot = s),
    });
  } finally {
    await listener.close();
    await app.close();
  }
}
