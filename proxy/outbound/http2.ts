/**
 * The outbound listener's HTTP/2: an application's h2c connection (prior knowledge) served by the
 * HTTP/2 codec's server role, each stream routed as an HTTP/1.1 request is ({@link OutboundRouter}:
 * its `:authority` resolved as a service host, the path normalized once, an endpoint chosen round
 * robin; a gateway's route configuration in gateway mode), then forwarded on a multiplexed HTTP/2
 * connection to that endpoint: mutual TLS with ALPN `istio-h2`, `istio`, `h2` and secure naming to a proxied endpoint,
 * h2c to an unproxied one. Streams to one endpoint share its connections (../h2proxy/mux_pool.ts);
 * another is opened only when the peer's concurrent-stream limit is reached. A stream to a port whose
 * protocol is `HTTP` goes as HTTP/1.1 on the router's HTTP/1.1 pools (../h2proxy/h1_upstream.ts). The proxy's own answers
 * (404 unknown host, 503 no endpoint or no connection) are gRPC-aware (../h2proxy/relay.ts).
 *
 * @module
 */
import type net from "node:net";
import { Http2Connection } from "../../shared/internal/http2/connection.ts";
import { DownstreamSet } from "../h2proxy/downstream_set.ts";
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";
import type { Http2Limits } from "../../shared/internal/http2/limits.ts";
import { HeadParser } from "../http/head.ts";
import { latin1 } from "../http/chars.ts";
import { REQUEST } from "../http/http_head.ts";
import type { Log, RequestFilter } from "../http/session_types.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import {
  adaptRequestHead,
  applyVerdict,
  headerLinesToList,
  type HeaderList,
  withXfcc,
} from "../h2proxy/request_head.ts";
import { answerLocally, guardStream, relayStream } from "../h2proxy/relay.ts";
import { relayToHttp1 } from "../h2proxy/h1_upstream.ts";
import { meteredStream } from "../h2proxy/stream_metrics.ts";
import { http2Pool, openStream, type UpstreamConnection } from "../h2proxy/upstream.ts";
import type { MuxPool } from "../h2proxy/mux_pool.ts";
import { mtlsDialer, plainDialer } from "./endpoint_pool.ts";
import { MESH_H2_ALPN } from "../tls/mesh_alpn.ts";
import type { OutboundObserver } from "./outbound_stats.ts";
import type { OutboundRouter, UpstreamEndpoint } from "./router.ts";

/** Settings of {@link OutboundHttp2}. */
export interface OutboundHttp2Options {
  router: OutboundRouter;
  snapshot(): RuntimeSnapshot;
  log: Log;
  observer: OutboundObserver;
  /** The codec's limits (both roles); Envoy's edge values by default. */
  limits?: Partial<Http2Limits>;
  /** Connect timeout to endpoints (ms). Default 10 s. */
  connectTimeoutMs?: number;
  /** An upstream connection without streams is closed after this long (ms). Default 60 s. */
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

/** Serves HTTP/2 connections of one outbound listener and owns its HTTP/2 endpoint pools. */
export class OutboundHttp2 {
  readonly #o: OutboundHttp2Options;
  readonly #pools = new Map<string, MuxPool<UpstreamConnection>>();
  readonly #downstream = new DownstreamSet();

  constructor(options: OutboundHttp2Options) {
    this.#o = options;
  }

  /** Open downstream HTTP/2 connections. */
  get connectionCount(): number {
    return this.#downstream.size;
  }

  /** Upstream HTTP/2 connections open now, over all endpoints. */
  get upstreamConnectionCount(): number {
    let n = 0;
    for (const p of this.#pools.values()) n += p.connectionCount;
    return n;
  }

  /**
   * Serves one downstream connection whose first bytes are the HTTP/2 preface (left on the socket).
   *
   * @param routeName the gateway route configuration of the connection (gateway mode)
   * @param filter a gateway's policies (gateway mode), run on each stream after routing, on the
   *   routed (normalized) path, as for HTTP/1.1
   * @param xfcc a MUTUAL HTTPS gateway server's X-Forwarded-Client-Cert element (the client
   *   certificate), appended as for HTTP/1.1; absent: a client's X-Forwarded-Client-Cert is removed
   */
  serve(
    socket: net.Socket,
    peer: string,
    routeName?: string,
    filter?: RequestFilter,
    xfcc: Uint8Array | null = null,
  ): void {
    const log = this.#o.log;
    const connection = new Http2Connection(socket, {
      role: "server",
      limits: this.#o.limits,
      log: (message: string) => log.debug("downstream HTTP/2", { peer, message }),
      onStream: (stream: Http2Stream) => {
        this.#o.observer.request();
        guardStream(stream, log, peer, () => this.#onStream(stream, peer, routeName, filter, xfcc));
      },
    });
    this.#downstream.add(connection);
    this.#o.observer.http2Connection("downstream");
  }

  async #onStream(
    stream: Http2Stream,
    peer: string,
    routeName: string | undefined,
    filter: RequestFilter | undefined,
    xfcc: Uint8Array | null,
  ): Promise<void> {
    const router = this.#o.router;
    let observer = meteredStream(this.#o.observer, router.localLabels(), stream);
    const adapted = adaptRequestHead(stream.headers);
    if (!adapted.ok) {
      return answerLocally(stream, undefined, { status: adapted.status, body: adapted.reason }, observer);
    }
    const routed = router.routeEndpoint(adapted.head, peer, routeName);
    const route = routed.route;
    if (!route.local && route.labels !== undefined) {
      observer = meteredStream(this.#o.observer, route.labels, stream);
    }
    if (route.local) {
      const headers: HeaderList = route.location === undefined ? [] : [["location", route.location]];
      return answerLocally(
        stream,
        adapted.contentType,
        { status: route.status, body: route.body, headers },
        observer,
      );
    }
    let forward = routed.head === null ? stream.headers : rewritten(stream.headers, routed.head);
    if (filter !== undefined) {
      const seen = routed.head === null ? adapted : adaptRequestHead(forward);
      if (!seen.ok) {
        return answerLocally(
          stream,
          adapted.contentType,
          { status: seen.status, body: seen.reason },
          observer,
        );
      }
      const verdict = await filter.check(seen.head);
      if (verdict?.reply) {
        const r = verdict.reply;
        const headers = headerLinesToList(r.headers);
        return answerLocally(
          stream,
          adapted.contentType,
          { status: r.status, body: r.body, headers },
          observer,
        );
      }
      forward = applyVerdict(forward, seen, verdict);
    }
    const ctx = {
      observer,
      log: this.#o.log,
      peer,
      target: route.target,
      contentType: adapted.contentType,
      timeouts: {
        requestTimeoutMs: this.#o.requestTimeoutMs ?? 0,
        routeTimeoutMs: route.timeoutMs ?? 0,
        onRequestTimeout: this.#o.onRequestTimeout,
      },
    };
    if (route.protocol === "HTTP" || route.protocol === "HTTP_PROXY") {
      // Its application speaks HTTP/1.1: the stream goes as HTTP/1.1 on the HTTP/1.1 pools, as Istio's cluster does.
      // HTTP/1.1's encoder sets X-Forwarded-Client-Cert itself, as for HTTP/1.1 clients.
      return relayToHttp1(stream, forward, router.http1Pool(route.endpoint), ctx, xfcc);
    }
    // As for HTTP/1.1: this hop's element appended (a MUTUAL gateway), else a received one removed.
    forward = withXfcc(forward, xfcc === null ? null : latin1(xfcc, 0, xfcc.length));
    const pool = this.#poolOf(route.endpoint);
    await relayStream(stream, forward, (h, end, cancelled) => openStream(pool, h, end, cancelled), ctx);
  }

  #poolOf(up: UpstreamEndpoint): MuxPool<UpstreamConnection> {
    let pool = this.#pools.get(up.key);
    if (pool !== undefined) return pool;
    const timeout = this.#o.connectTimeoutMs ?? 10_000;
    const { address, port, identity, mtls } = up;
    pool = http2Pool({
      dial: mtls
        ? () => {
          const cert = this.#o.snapshot().certificate;
          if (cert === undefined) return Promise.reject(new Error("the proxy has no workload certificate"));
          return mtlsDialer({
            host: address,
            port,
            cert,
            identity,
            timeoutMs: timeout,
            alpn: MESH_H2_ALPN,
          })();
        }
        : plainDialer(address, port, timeout),
      limits: this.#o.limits,
      log: this.#o.log,
      target: `${address}:${port}`,
      idleTimeoutMs: this.#o.idleTimeoutMs,
      onConnect: () => {
        this.#o.observer.upstreamConnection(mtls);
        this.#o.observer.http2Connection("upstream");
      },
    });
    this.#pools.set(up.key, pool);
    return pool;
  }

  /** Closes idle upstream connections; forgets pools unused for a minute. */
  sweep(now: number): void {
    const idle = this.#downstream.sweep(now, this.#o.downstreamIdleTimeoutMs ?? 300_000);
    for (let i = 0; i < idle; i++) this.#o.onIdleClose?.();
    for (const [key, pool] of this.#pools) {
      pool.sweep(now);
      if (pool.openCount === 0 && now - pool.lastUsed > 60_000) this.#pools.delete(key);
    }
  }

  /** Closes every downstream and upstream connection. */
  close(): void {
    this.#downstream.close();
    for (const p of this.#pools.values()) p.close();
    this.#pools.clear();
  }
}

/** The header list with `:path` and `:authority` from the router's rewritten head (normalized path). */
function rewritten(headers: HeaderList, head: Uint8Array): HeaderList {
  const parser = new HeadParser(REQUEST, { maxHeadBytes: head.length + 1, maxHeaders: headers.length + 2 });
  parser.feed(head);
  const path = parser.head.targetText();
  const host = parser.head.get("host");
  return headers.map(([n, v]): [string, string] =>
    n === ":path" ? [n, path] : n === ":authority" && host !== undefined ? [n, host] : [n, v]
  );
}
