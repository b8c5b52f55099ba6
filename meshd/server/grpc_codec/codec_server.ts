/**
 * meshd's gRPC serving on the project's own HTTP/2 codec, in meshd's process (`--grpcTransport codec`,
 * README.md): node:net listeners on --grpcAddr (plain text) and --secureGRPCAddr (mutual TLS through
 * node:tls: a client certificate is requested and verified against the mesh roots, and shown to the
 * handlers only when it verifies, as grpc-js does; the serving
 * certificate and roots follow the `CertificateProvider` feed at run time, for new connections), an
 * `Http2Connection` per connection, a {@link GrpcCall} per stream, and meshd's handlers behind the
 * serving bridge's `ChildCalls` exactly as for the serving children. The codec has no nghttp2, so a
 * client's GOAWAY cannot abort meshd (denoland/deno#36788) and no child processes are needed.
 *
 * Per connection: keepalive PINGs every --keepaliveInterval, closed when one is not answered within
 * --keepaliveTimeout (grpc-js's `keepalive_time_ms`/`keepalive_timeout_ms`); a graceful GOAWAY after
 * --keepaliveMaxServerConnectionAge; at most `maxStreams` streams (REFUSED_STREAM above it).
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import * as net from "node:net";
import * as tls from "node:tls";
import { Http2Connection } from "../../../shared/internal/http2/connection.ts";
import type { Http2Stream } from "../../../shared/internal/http2/stream.ts";
import { type BridgeServer, ChildCalls } from "../serving/bridge.ts";
import type { PoolLogger } from "../serving/pool.ts";
import { watchTlsMaterial } from "../serving/tls_material.ts";
import type { ChildServerOptions, PeerCertificate, TlsMaterial, Transport } from "../serving/wire.ts";
import { GrpcCall } from "./grpc_call.ts";

const EMPTY = new Uint8Array(0);
/** Our output a connection may hold before DATA waits for the socket, octets. */
const WRITE_BUFFER_BYTES = 1024 * 1024;

/** Options of {@link CodecServer}. */
export interface CodecServerOptions {
  /** Listeners: plain-text ADS, and the mutual-TLS port when `certificates` is given. */
  listen: Partial<Record<Transport, { hostname: string; port: number }>>;
  /** The services of each listener. */
  servers: Record<Transport, BridgeServer>;
  /** Streams, message size, keepalive and connection age, as for the serving children. */
  serverOptions: ChildServerOptions;
  /** meshd's serving certificate and client roots. */
  certificates?: grpc.experimental.CertificateProvider;
  logger?: PoolLogger;
}

interface Connection {
  socket: net.Socket;
  h2: Http2Connection;
  timers: ReturnType<typeof setTimeout>[];
}

function peerText(socket: net.Socket): string {
  const host = socket.remoteAddress ?? "";
  return `${host.includes(":") ? `[${host}]` : host}:${socket.remotePort ?? 0}`;
}

/** The verified client certificate of a TLS socket, as the bridge carries it. */
function peerCertificate(socket: tls.TLSSocket): PeerCertificate | undefined {
  if (!socket.authorized) return undefined;
  const cert = socket.getPeerCertificate(true);
  if (!cert?.raw) return undefined;
  return {
    subjectaltname: cert.subjectaltname ?? "",
    serialNumber: cert.serialNumber ?? "",
    raw: Buffer.from(cert.raw).toString("base64"),
  };
}

/** See the module doc. */
export class CodecServer {
  readonly #o: CodecServerOptions;
  readonly #calls: ChildCalls;
  readonly #open = new Map<number, GrpcCall>();
  readonly #listeners: net.Server[] = [];
  readonly #connections = new Set<Connection>();
  #tlsServer: tls.Server | undefined;
  #nextId = 0;
  #stopping = false;

  /** @param options listeners, services, limits; see {@link CodecServerOptions} */
  constructor(options: CodecServerOptions) {
    this.#o = options;
    this.#calls = new ChildCalls(options.servers, (frame, body) => {
      if (frame.t === "init" || frame.t === "tls") return;
      const call = this.#open.get(frame.id);
      if (frame.t === "end") this.#open.delete(frame.id);
      call?.answer(frame, body ?? EMPTY);
    }, (peer) => peer);
  }

  /** Client connections open now. */
  get connections(): number {
    return this.#connections.size;
  }

  /** Calls in progress. */
  get calls(): number {
    return this.#calls.size;
  }

  /**
   * Binds the listeners.
   *
   * @returns the bound ports (0 for a listener not asked for)
   * @throws Error naming the listener's address when it cannot be bound
   */
  async start(): Promise<Record<Transport, number>> {
    const ports: Record<Transport, number> = { plaintext: 0, tls: 0 };
    if (this.#o.certificates && this.#o.listen.tls) {
      const first = await watchTlsMaterial(this.#o.certificates, (m) => this.#useTls(m));
      this.#useTls(first);
    }
    for (const transport of ["plaintext", "tls"] as const) {
      const at = this.#o.listen[transport];
      if (!at || (transport === "tls" && !this.#tlsServer)) continue;
      const server = net.createServer({ noDelay: true }, (socket) => this.#accept(socket, transport));
      this.#listeners.push(server);
      ports[transport] = await new Promise<number>((resolve, reject) => {
        server.once("error", (e) => reject(new Error(`${at.hostname}:${at.port}: ${e.message}`)));
        server.listen(
          { host: at.hostname, port: at.port },
          () => resolve((server.address() as net.AddressInfo).port),
        );
      });
      server.on("error", (e) => this.#o.logger?.error(`gRPC listener ${transport}: ${e.message}`));
    }
    return ports;
  }

  /**
   * Stops accepting, waits up to `graceMs` (--shutdownDuration) for unary calls in flight (CSRs), then
   * closes every connection without a GOAWAY, as the serving children do: a GOAWAY made clients on
   * node:http2 abort (denoland/deno#36788, meshd/server/serving/README.md). Their ADS streams end as
   * cancelled; proxies keep their config and reconnect.
   */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    // A listener's close callback waits for its connections: they are dropped below.
    const closed = this.#listeners.map((l) => new Promise<void>((r) => l.close(() => r())));
    const deadline = Date.now() + graceMs;
    while (this.#calls.unaryInFlight > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const c of [...this.#connections]) this.#drop(c);
    this.#calls.closeAll();
    await Promise.all(closed);
  }

  #useTls(m: TlsMaterial): void {
    let server: tls.Server;
    try {
      server = tls.createServer({
        key: m.privateKeyPem,
        cert: m.certChainPem,
        ca: m.trustBundlePem,
        // As grpc-js with requireClientCertificate false (meshd's secure port): a certificate is asked
        // for, and shown to handlers only when it verifies; a client without one (a CSR with a bootstrap
        // token) is served, and XDS_AUTH and the CA decide.
        requestCert: true,
        rejectUnauthorized: false,
        minVersion: "TLSv1.2",
        ALPNProtocols: ["h2"],
      });
    } catch (e) {
      // The previous context stays in use: a broken update never drops the secure port.
      this.#o.logger?.error(
        `--secureGRPCAddr: serving certificate not usable, kept the previous one: ${(e as Error).message}`,
      );
      return;
    }
    server.on(
      "secureConnection",
      (socket: tls.TLSSocket) => this.#serve(socket, "tls", peerCertificate(socket)),
    );
    server.on("tlsClientError", (_e: Error, socket: tls.TLSSocket) => socket.destroy());
    this.#tlsServer = server;
  }

  #accept(socket: net.Socket, transport: Transport): void {
    if (this.#stopping) return void socket.destroy();
    socket.on("error", () => {});
    if (transport === "plaintext") return this.#serve(socket, transport, undefined);
    this.#tlsServer!.emit("connection", socket);
  }

  #serve(socket: net.Socket, transport: Transport, cert: PeerCertificate | undefined): void {
    if (this.#stopping) return void socket.destroy();
    const o = this.#o.serverOptions;
    const peer = peerText(socket);
    const h2 = new Http2Connection(socket, {
      role: "server",
      // A push writes to up to thousands of streams of one connection at once: with the codec's 64 KiB
      // the pump waited for 'drain' every few dozen streams. 1 MiB is Envoy's default
      // per_connection_buffer_limit_bytes.
      limits: { maxConcurrentStreams: o.maxStreams, writeBufferBytes: WRITE_BUFFER_BYTES },
      onStream: (stream) => this.#stream(stream, transport, peer, cert),
      log: (line) => this.#o.logger?.warn(`gRPC ${peer}: ${line}`),
    });
    const c: Connection = { socket, h2, timers: [] };
    this.#connections.add(c);
    this.#keepalive(c, o);
    if (o.maxConnectionAgeMs !== undefined) c.timers.push(setTimeout(() => h2.close(), o.maxConnectionAgeMs));
    void h2.closed.then(() => {
      for (const t of c.timers) clearTimeout(t);
      this.#connections.delete(c);
    });
  }

  #stream(stream: Http2Stream, transport: Transport, peer: string, cert: PeerCertificate | undefined): void {
    const server = this.#o.servers[transport];
    const id = ++this.#nextId;
    const call = new GrpcCall(id, stream, {
      transport,
      peer,
      cert,
      kind: (path) => server.method(path)?.kind,
      maxRecvMessageBytes: this.#o.serverOptions.maxRecvMessageBytes,
      deliver: (frame, body) => {
        if (frame.t === "gone") this.#open.delete(frame.id);
        this.#calls.onFrame(frame, body);
      },
    });
    this.#open.set(id, call);
    if (!call.start()) this.#open.delete(id);
  }

  /** PING every interval; no answer within the timeout closes the connection (its calls end cancelled). */
  #keepalive(c: Connection, o: ChildServerOptions): void {
    const tick = (): void => {
      let answered = false;
      const timeout = setTimeout(() => answered || this.#drop(c), o.keepaliveTimeoutMs);
      c.timers[0] = timeout;
      c.h2.ping().then(() => {
        answered = true;
        clearTimeout(timeout);
        c.timers[0] = setTimeout(tick, o.keepaliveIntervalMs);
      }, () => clearTimeout(timeout));
    };
    c.timers.push(setTimeout(tick, o.keepaliveIntervalMs));
  }

  #drop(c: Connection): void {
    for (const t of c.timers) clearTimeout(t);
    c.socket.destroy();
    this.#connections.delete(c);
  }
}
