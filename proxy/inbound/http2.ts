/**
 * The inbound listener's HTTP/2: a connection that negotiated ALPN `h2` in the mutual TLS handshake,
 * or that starts with the HTTP/2 preface (after TLS, or in plain text where the port's mode allows
 * it), served by the HTTP/2 codec's server role. Every stream passes the same filter chain as an
 * HTTP/1.1 request ({@link InboundPolicyFilter} on the stream's headers seen as an HTTP/1.1 head,
 * ../h2proxy/request_head.ts: path normalization, RequestAuthentication, AuthorizationPolicy with
 * the connection's peer identity); a denial or a bad token is answered as Envoy does, gRPC-aware
 * (PERMISSION_DENIED, UNAUTHENTICATED for `application/grpc` requests). X-Forwarded-Client-Cert is
 * set as for HTTP/1.1 (APPEND_FORWARD with mutual TLS, removed without), then the stream goes to the
 * application over h2c, on a multiplexed connection pool to `appAddress:appPort`. An h2c client on
 * an `HTTP` port (taken over from the HTTP/1.1 codec at its 505, ./listener.ts) has its streams sent
 * to the application as HTTP/1.1 instead (../h2proxy/h1_upstream.ts), as Envoy's AUTO codec and
 * Istio's HTTP/1.1 inbound cluster do.
 *
 * @module
 */
import type net from "node:net";
import { Http2Connection } from "../../shared/internal/http2/connection.ts";
import { DownstreamSet } from "../h2proxy/downstream_set.ts";
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";
import type { Http2Limits } from "../../shared/internal/http2/limits.ts";
import type { Log, Upstream } from "../http/session_types.ts";
import { relayToHttp1 } from "../h2proxy/h1_upstream.ts";
import { ascii } from "../http/chars.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { type ConnectionAttributes, InboundPolicyFilter } from "../filters/mod.ts";
import { adaptRequestHead, applyVerdict, headerLinesToList, withXfcc } from "../h2proxy/request_head.ts";
import { answerLocally, guardStream, relayStream, type StreamObserver } from "../h2proxy/relay.ts";
import { meteredStream } from "../h2proxy/stream_metrics.ts";
import type { IstioMetrics } from "../http/istio_metrics.ts";
import { inboundIstioLabels } from "../http/istio_labels.ts";
import { http2Pool, openStream, type UpstreamConnection } from "../h2proxy/upstream.ts";
import type { MuxPool } from "../h2proxy/mux_pool.ts";
import { plainDialer } from "../outbound/endpoint_pool.ts";
import type { InboundObserver } from "./observer.ts";

/** Settings of {@link InboundHttp2}. */
export interface InboundHttp2Options {
  appAddress: string;
  appPort: number;
  snapshot(): RuntimeSnapshot;
  log: Log;
  observer: InboundObserver;
  /** The codec's limits (both roles); Envoy's edge values by default. */
  limits?: Partial<Http2Limits>;
  /** Istio's standard request metrics (the worker's); none counted when absent. */
  requestMetrics?: IstioMetrics;
  /** Connect timeout to the application (ms). Default 10 s. */
  connectTimeoutMs?: number;
  /** An application connection without streams is closed after this long (ms). Default 60 s. */
  idleTimeoutMs?: number;
  /** A downstream connection without streams is closed after this long (ms; 0 never). Default 300 s. */
  downstreamIdleTimeoutMs?: number;
  /** Counts downstream connections closed for being idle (the listener's `downstream_cx_idle_timeout`). */
  onIdleClose?: () => void;
  /** The listener's `--requestTimeout` for each stream (ms; 0 or absent: off). */
  requestTimeoutMs?: number;
  /** Counts a stream's request timeout (the listener's `downstream_rq_timeout`). */
  onRequestTimeout?: () => void;
}

/** Serves the HTTP/2 connections of one inbound listener; owns its h2c pool to the application. */
export class InboundHttp2 {
  readonly #o: InboundHttp2Options;
  readonly #pool: MuxPool<UpstreamConnection>;
  readonly #downstream = new DownstreamSet();

  constructor(options: InboundHttp2Options) {
    this.#o = options;
    const target = `${options.appAddress}:${options.appPort}`;
    this.#pool = http2Pool({
      dial: plainDialer(options.appAddress, options.appPort, options.connectTimeoutMs ?? 10_000),
      limits: options.limits,
      log: options.log,
      target,
      idleTimeoutMs: options.idleTimeoutMs,
      onConnect: () => {
        options.observer.upstreamConnection();
        options.observer.http2Connection("upstream");
      },
    });
  }

  /** Open downstream HTTP/2 connections. */
  get connectionCount(): number {
    return this.#downstream.size;
  }

  /** h2c connections to the application open now. */
  get upstreamConnectionCount(): number {
    return this.#pool.connectionCount;
  }

  /**
   * Serves one connection (its HTTP/2 preface still on the socket).
   *
   * @param attributes what the filters know of the connection
   * @param xfcc this hop's X-Forwarded-Client-Cert element (mutual TLS), or null (plain text)
   * @param http1 the application's HTTP/1.1 pool when it speaks HTTP/1.1 (an `HTTP` port): each
   *   stream goes to it translated (../h2proxy/h1_upstream.ts); absent: h2c to the application
   */
  serve(socket: net.Socket, attributes: ConnectionAttributes, xfcc: string | null, http1?: Upstream): void {
    const log = this.#o.log;
    const filter = new InboundPolicyFilter(this.#o.snapshot, attributes, log);
    const metrics = this.#o.requestMetrics;
    const labels = metrics?.labels(inboundIstioLabels(this.#o.snapshot(), attributes.principal ?? null));
    const connection = new Http2Connection(socket, {
      role: "server",
      limits: this.#o.limits,
      log: (message: string) => log.debug("downstream HTTP/2", { peer: attributes.peer, message }),
      onStream: (stream: Http2Stream) => {
        this.#o.observer.request();
        const observer = meteredStream(this.#o.observer, labels, stream);
        guardStream(
          stream,
          log,
          attributes.peer,
          () => this.#onStream(stream, filter, attributes.peer, xfcc, observer, http1),
        );
      },
    });
    this.#downstream.add(connection);
    this.#o.observer.http2Connection("downstream");
  }

  async #onStream(
    stream: Http2Stream,
    filter: InboundPolicyFilter,
    peer: string,
    xfcc: string | null,
    observer: StreamObserver,
    http1: Upstream | undefined,
  ): Promise<void> {
    const adapted = adaptRequestHead(stream.headers, `${this.#o.appAddress}:${this.#o.appPort}`);
    if (!adapted.ok) {
      return answerLocally(stream, undefined, { status: adapted.status, body: adapted.reason }, observer);
    }
    const verdict = await filter.check(adapted.head);
    if (verdict?.reply) {
      const r = verdict.reply;
      return answerLocally(stream, adapted.contentType, {
        status: r.status,
        body: r.body,
        headers: headerLinesToList(r.headers),
      }, observer);
    }
    const verdicted = applyVerdict(stream.headers, adapted, verdict);
    const ctx = {
      observer,
      log: this.#o.log,
      peer,
      target: `${this.#o.appAddress}:${this.#o.appPort}`,
      contentType: adapted.contentType,
      timeouts: {
        requestTimeoutMs: this.#o.requestTimeoutMs ?? 0,
        routeTimeoutMs: 0,
        onRequestTimeout: this.#o.onRequestTimeout,
      },
    };
    // HTTP/1.1's encoder sets X-Forwarded-Client-Cert itself, as for HTTP/1.1 clients.
    if (http1 !== undefined) {
      return relayToHttp1(stream, verdicted, http1, ctx, xfcc === null ? null : ascii(xfcc));
    }
    const forward = withXfcc(verdicted, xfcc);
    await relayStream(stream, forward, (h, end, cancelled) => openStream(this.#pool, h, end, cancelled), ctx);
  }

  /** Closes idle application connections. */
  sweep(now: number): void {
    const idle = this.#downstream.sweep(now, this.#o.downstreamIdleTimeoutMs ?? 300_000);
    for (let i = 0; i < idle; i++) this.#o.onIdleClose?.();
    this.#pool.sweep(now);
  }

  /** Closes every downstream connection and the application pool. */
  close(): void {
    this.#downstream.close();
    this.#pool.close();
  }
}
