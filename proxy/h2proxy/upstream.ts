/**
 * Client-role HTTP/2 connections to the next hop, in {@link MuxPool}s: to a proxied endpoint over
 * mutual TLS with ALPN `h2` and secure naming (../outbound/endpoint_pool.ts's dialer), to an
 * unproxied endpoint or the local application over h2c (prior knowledge). When the peer's TLS did not
 * select `h2` (an inbound port whose protocol is auto-detected offers no ALPN), the preface is sent
 * anyway: that inbound listener recognizes it.
 *
 * @module
 */
import type net from "node:net";
import type tls from "node:tls";
import { Http2Connection } from "../../shared/internal/http2/connection.ts";
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";
import type { Http2Limits } from "../../shared/internal/http2/limits.ts";
import { CANCEL } from "../../shared/internal/http2/frame.ts";
import { type Dialer, DialError } from "../outbound/endpoint_pool.ts";
import type { HeaderList } from "./request_head.ts";
import { type MuxConnection, MuxPool } from "./mux_pool.ts";
import type { Log } from "../http/session_types.ts";

/** A client connection as the pool counts it. */
export class UpstreamConnection implements MuxConnection {
  readonly connection: Http2Connection;
  constructor(connection: Http2Connection) {
    this.connection = connection;
  }
  get activeStreams(): number {
    return this.connection.activeStreams;
  }
  get canOpenStream(): boolean {
    return this.connection.canOpenStream;
  }
  get draining(): boolean {
    return this.connection.draining;
  }
  /** Opens a stream with the request headers. */
  request(headers: HeaderList, endStream: boolean): Http2Stream {
    return this.connection.request(headers, { endStream });
  }
  close(): void {
    this.connection.close();
  }
}

/** Settings of {@link http2Pool}. */
export interface Http2PoolOptions {
  /** Connects the socket (TCP, or TLS verified with its peer check). */
  dial: Dialer;
  /** The codec's limits for these connections; its defaults when absent. */
  limits?: Partial<Http2Limits>;
  log: Log;
  /** Where the connections go, for logs. */
  target: string;
  idleTimeoutMs?: number;
  /** Time for the peer's SETTINGS after the connection is made (ms). Default 10 s. */
  settingsTimeoutMs?: number;
  onConnect?: () => void;
}

/**
 * Resolves once the peer's SETTINGS have arrived, so that streams are not opened beyond a limit the
 * peer is about to announce (the server sends its SETTINGS first thing: no round trip is added to
 * the TCP or TLS handshake). Rejects, closing the connection, when it closes or `timeoutMs` passes first.
 */
function peerSettings(
  c: Http2Connection,
  socket: net.Socket,
  timeoutMs: number,
  target: string,
): Promise<void> {
  if (c.peerSettingsReceived) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const done = (err?: Error) => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("close", onClose);
      if (err === undefined) return resolve();
      c.close(CANCEL);
      socket.destroy();
      reject(err);
    };
    // Registered after the codec's listener: runs once the codec has read the chunk.
    const onData = () => {
      if (c.peerSettingsReceived) done();
    };
    const onClose = () =>
      done(new DialError("connect_failure", `${target} closed before its HTTP/2 SETTINGS`));
    const timer = setTimeout(
      () => done(new DialError("timeout", `${target} sent no HTTP/2 SETTINGS within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.on("data", onData);
    socket.once("close", onClose);
  });
}

/** A pool of multiplexed HTTP/2 connections made with `dial`. */
export function http2Pool(o: Http2PoolOptions): MuxPool<UpstreamConnection> {
  return new MuxPool<UpstreamConnection>({
    async dial() {
      const socket: net.Socket = await o.dial();
      const alpn = (socket as tls.TLSSocket).alpnProtocol;
      if (alpn !== undefined && alpn !== false && alpn !== "h2") {
        socket.destroy();
        throw new DialError("tls_failure", `${o.target} selected ALPN ${alpn}, not h2`);
      }
      socket.setNoDelay(true);
      const connection = new Http2Connection(socket, {
        role: "client",
        limits: o.limits,
        log: (message: string) => o.log.debug("upstream HTTP/2", { target: o.target, message }),
      });
      await peerSettings(connection, socket, o.settingsTimeoutMs ?? 10_000, o.target);
      return new UpstreamConnection(connection);
    },
    idleTimeoutMs: o.idleTimeoutMs,
    onConnect: o.onConnect,
  });
}

/**
 * Opens a stream on a pooled connection (a new connection when every one is full), unless
 * `cancelled()` says, once a connection is there, that it is no longer wanted (the client reset its
 * stream meanwhile: a flood of resets must not become a flood of upstream streams).
 *
 * @throws Error "stream cancelled", or what the dial threw
 */
export function openStream(
  pool: MuxPool<UpstreamConnection>,
  headers: HeaderList,
  endStream: boolean,
  cancelled: () => boolean = () => false,
): Promise<Http2Stream> {
  return pool.open((c) => {
    if (cancelled()) throw new Error("stream cancelled");
    return c.request(headers, endStream);
  });
}
