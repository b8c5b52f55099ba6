/**
 * Where each outbound request goes: its target normalized once with the mesh's `pathNormalization`
 * (./target.ts), then, by its authority as a service ({@link resolveHost}) or, in gateway mode, by
 * the route configuration of its connection ({@link selectRoute}), an endpoint chosen round robin
 * and the keep-alive pool of connections to it (mutual TLS with secure naming when the endpoint is
 * proxied, else plain text); or the proxy's own answer (400, 404, 503, a 301 to https) and why.
 *
 * @module
 */
import type { HttpHead } from "../http/http_head.ts";
import type { Log } from "../http/session_types.ts";
import {
  type CertificateInfo,
  type EndpointInfo,
  type RuntimeSnapshot,
  settingsInForce,
} from "../runtime/snapshot.ts";
import type { IstioMetrics, LabelSet } from "../http/istio_metrics.ts";
import { outboundIstioLabels } from "../http/istio_labels.ts";
import { selectRoute } from "../../shared/routing/mod.ts";
import { dialsMtls } from "../../shared/policy/auto_mtls.ts";
import { type EndpointChoice, RoundRobin, WeightedRoundRobin } from "./balancer.ts";
import { DialError, EndpointPool, mtlsDialer, type MtlsTarget, plainDialer } from "./endpoint_pool.ts";
import { denoMtlsConnect } from "./deno_mtls.ts";
import { MESH_HTTP1_ALPN } from "../tls/mesh_alpn.ts";
import type { LocalReplyKind, OutboundObserver } from "./outbound_stats.ts";
import { type Resolution, resolveHost, resolveService } from "./resolve.ts";
import { type RoutedTarget, routedTarget } from "./target.ts";

/** The endpoint a request was routed to, and how the proxy connects to it. */
export interface UpstreamEndpoint {
  /** `mtls|<address:port>|<identity>` or `plain|<address:port>`: one connection pool per key. */
  key: string;
  address: string;
  port: number;
  /** Mutual TLS with secure naming (a proxied endpoint), else plain text. */
  mtls: boolean;
  /** The SPIFFE ID the endpoint's certificate must carry (mutual TLS). */
  identity: string;
}

/** The proxy's own answer instead of forwarding. */
export type LocalRoute = { local: true; status: number; body: string; location?: string };

/**
 * An endpoint route. `target` is `<service key> <address:port>` for logs; `protocol` the service
 * port's (`HTTP`, `GRPC`, `""`...); `labels` the Istio standard-metric label set of the request, when
 * the listener counts them; `timeoutMs` the gateway route's timeout (VirtualService
 * `http[].timeout`), applied by the HTTP/2 path (../h2proxy/relay.ts).
 */
export type EndpointRoute = {
  local: false;
  endpoint: UpstreamEndpoint;
  target: string;
  protocol?: string;
  labels?: LabelSet;
  timeoutMs?: number;
};

/**
 * An endpoint route as {@link OutboundRouter} keeps it per endpoint choice, so that a request to the
 * same service port allocates no route: valid while `gen` is the router's (a pool forgotten or
 * closed bumps it) and the service, protocol and timeout are the request's.
 */
type CachedRoute = EndpointRoute & { pool?: EndpointPool; service: string; gen: number };

/** Where the current request of a connection goes. */
export type Route = (EndpointRoute & { pool: EndpointPool }) | LocalRoute;

/** A request's route, and the head to forward instead of the received one (null: unchanged). */
export interface Routed {
  route: Route;
  head: Uint8Array | null;
}

export const NO_ROUTE: Route = { local: true, status: 404, body: "no request yet" };

/** What routing reads of the listener's settings. */
export interface RouterOptions {
  /** The current runtime snapshot; read for every request. */
  snapshot(): RuntimeSnapshot;
  log: Log;
  /** Gateway mode: the route configurations requests are routed by (see OutboundListenerOptions). */
  routeNames?: readonly string[];
  /** Upstream pools, one per endpoint. */
  upstream?: {
    maxIdle?: number;
    idleTimeoutMs?: number;
    connectTimeoutMs?: number;
    /** The TLS client of the HTTP/1.1 mesh leg: node:tls (the default) or Deno's (./deno_mtls.ts). */
    meshTls?: "node" | "deno";
  };
  /** Istio's standard request metrics (the worker's); none counted when absent. */
  requestMetrics?: IstioMetrics;
}

/** Routes the requests of one outbound listener and owns its endpoint pools. */
export class OutboundRouter {
  readonly #o: RouterOptions;
  readonly #log: Log;
  readonly #observer: OutboundObserver;
  readonly #connectTimeoutMs: number;
  readonly #rr = new RoundRobin();
  readonly #weighted = new WeightedRoundRobin();
  readonly #pools = new Map<string, EndpointPool>();
  // Interned per (endpoint, service key): no allocation per request. Bounded by the endpoints seen.
  readonly #labels = new Map<string, Map<string, LabelSet>>();
  readonly #localLabels = new WeakMap<RuntimeSnapshot, LabelSet>();
  /** Routes per endpoint choice (stable per snapshot, ./balancer.ts); see {@link CachedRoute}. */
  readonly #routes = new WeakMap<EndpointChoice, CachedRoute>();
  #gen = 0;

  constructor(options: RouterOptions, observer: OutboundObserver) {
    this.#o = options;
    this.#log = options.log;
    this.#observer = observer;
    this.#connectTimeoutMs = options.upstream?.connectTimeoutMs ?? 10_000;
  }

  /** Endpoint pools now (one per endpoint address, port and identity). */
  get poolCount(): number {
    return this.#pools.size;
  }

  /**
   * The route of one request head, with its target normalized once with the mesh's option (never
   * throws: a failure becomes a local reply).
   */
  route(h: HttpHead, peer: string, routeName: string | undefined): Routed {
    const routed = this.routeEndpoint(h, peer, routeName);
    const r = routed.route;
    if (r.local) return { route: r, head: routed.head };
    // The pool is set once on the cached route (a pool forgotten by sweep() invalidates the cache).
    const c = r as CachedRoute;
    c.pool ??= this.#poolOf(r.endpoint);
    return { route: c as EndpointRoute & { pool: EndpointPool }, head: routed.head };
  }

  /**
   * As {@link route}, without an HTTP/1.1 connection pool: for a caller that connects to the endpoint
   * its own way (HTTP/2 multiplexing, ../h2proxy).
   */
  routeEndpoint(
    h: HttpHead,
    peer: string,
    routeName: string | undefined,
  ): { route: EndpointRoute | LocalRoute; head: Uint8Array | null } {
    try {
      const snapshot = this.#o.snapshot();
      const target = routedTarget(h, settingsInForce(snapshot).pathNormalization);
      if (!target.ok) {
        return {
          route: this.#local("bad_request", 400, `invalid request target: ${target.reason}`, peer),
          head: null,
        };
      }
      return { route: this.#routeOf(target, snapshot, peer, routeName), head: target.head };
    } catch (e) {
      this.#log.error("outbound routing failed", { peer, error: String(e) });
      return {
        route: { local: true, status: 500, body: "internal error while routing the request" },
        head: null,
      };
    }
  }

  #routeOf(
    t: RoutedTarget & { ok: true },
    snapshot: RuntimeSnapshot,
    peer: string,
    routeName: string | undefined,
  ): EndpointRoute | LocalRoute {
    if (t.authority === null) {
      return this.#local(
        "bad_authority",
        400,
        "request has no Host header and no absolute-form target",
        peer,
      );
    }
    if (t.scheme !== "" && t.scheme !== "http") {
      return this.#local("bad_authority", 400, `unsupported scheme ${t.scheme}`, peer);
    }
    const namespace = snapshot.workload?.namespace;
    let r: Resolution;
    let timeoutMs = 0;
    if (this.#o.routeNames !== undefined) {
      const picked = this.#gatewayDestination(snapshot, routeName, t.authority, t.path);
      if ("reason" in picked) return this.#local("no_route", 404, picked.reason, peer);
      if ("redirect" in picked) {
        // Envoy's require_tls: 301 to https, dropping an explicit :80.
        const host = t.authority.replace(/:80$/, "");
        return {
          local: true,
          status: 301,
          body: "",
          location: `https://${host}${t.path}${t.query}`,
        };
      }
      r = resolveService(picked, namespace, snapshot);
      timeoutMs = picked.timeoutMs;
    } else {
      r = resolveHost(t.authority, namespace, snapshot);
    }
    if (!r.ok) return this.#local(r.status === 400 ? "bad_authority" : "no_route", r.status, r.reason, peer);
    const choice = this.#rr.pickEndpoint(r.key, r.service.endpoints, r.port.number);
    if (choice === undefined) {
      return this.#local(
        "no_healthy_upstream",
        503,
        `no healthy upstream: service ${r.key} has no endpoint for port ${r.port.number}`,
        peer,
      );
    }
    const cert = snapshot.certificate;
    const cached = this.#routes.get(choice);
    if (
      cached !== undefined && cached.gen === this.#gen && cached.service === r.key &&
      cached.protocol === r.port.protocol && (cached.timeoutMs ?? 0) === timeoutMs &&
      (cert !== undefined || !cached.endpoint.mtls)
    ) return cached;
    const { endpoint, port } = choice;
    const target = `${endpoint.address}:${port}`;
    const mtls = dialsMtls(endpoint, r.port.number);
    if (mtls && cert === undefined) {
      return this.#local(
        "no_certificate",
        503,
        `no healthy upstream: ${target} of ${r.key} needs mutual TLS and the proxy has no workload certificate yet`,
        peer,
      );
    }
    const up: UpstreamEndpoint = {
      key: mtls ? `mtls|${target}|${endpoint.identity}` : `plain|${target}`,
      address: endpoint.address,
      port,
      mtls,
      identity: endpoint.identity,
    };
    const route: CachedRoute = {
      local: false,
      endpoint: up,
      target: `${r.key} ${target}`,
      protocol: r.port.protocol,
      labels: this.#labelsOf(up.key, r, endpoint, snapshot),
      ...(timeoutMs > 0 ? { timeoutMs } : {}),
      service: r.key,
      gen: this.#gen,
    };
    this.#routes.set(choice, route);
    return route;
  }

  /**
   * The HTTP/1.1 keep-alive pool of an endpoint that {@link routeEndpoint} chose: for an HTTP/2
   * stream to an HTTP/1.1 port (../h2proxy/h1_upstream.ts).
   */
  http1Pool(up: UpstreamEndpoint): EndpointPool {
    return this.#poolOf(up);
  }

  /** The HTTP/1.1 keep-alive pool of an endpoint, made on first use. */
  #poolOf(up: UpstreamEndpoint): EndpointPool {
    let pool = this.#pools.get(up.key);
    if (pool === undefined) {
      const { address, port, mtls, identity } = up;
      // The dialer reads the current certificate per connection, so rotation reaches new connections.
      const withCert = <T>(connect: (cert: CertificateInfo) => Promise<T>) => (): Promise<T> => {
        const cert = this.#o.snapshot().certificate;
        return cert === undefined
          ? Promise.reject(new DialError("tls_failure", "the proxy has no workload certificate"))
          : connect(cert);
      };
      const timeout = this.#connectTimeoutMs;
      const target = (cert: CertificateInfo): MtlsTarget => ({
        host: address,
        port,
        cert,
        identity,
        timeoutMs: timeout,
        alpn: MESH_HTTP1_ALPN,
      });
      const denoTls = mtls && this.#o.upstream?.meshTls === "deno";
      pool = new EndpointPool({
        dial: mtls ? withCert((c) => mtlsDialer(target(c))()) : plainDialer(address, port, timeout),
        dialIo: denoTls ? withCert((c) => denoMtlsConnect(target(c))) : undefined,
        maxIdle: this.#o.upstream?.maxIdle,
        idleTimeoutMs: this.#o.upstream?.idleTimeoutMs,
        onConnect: () => this.#observer.upstreamConnection(mtls),
      });
      this.#pools.set(up.key, pool);
    }
    return pool;
  }

  #labelsOf(
    key: string,
    r: Resolution & { ok: true },
    endpoint: EndpointInfo,
    snapshot: RuntimeSnapshot,
  ): LabelSet | undefined {
    const metrics = this.#o.requestMetrics;
    if (metrics === undefined) return undefined;
    let byService = this.#labels.get(key);
    if (byService === undefined) this.#labels.set(key, byService = new Map());
    let set = byService.get(r.key);
    if (set === undefined) {
      set = metrics.labels(outboundIstioLabels(snapshot, r.service, endpoint));
      byService.set(r.key, set);
    }
    return set;
  }

  /** The label set of the proxy's own replies (destination `unknown`), when the listener counts metrics. */
  localLabels(): LabelSet | undefined {
    const metrics = this.#o.requestMetrics;
    if (metrics === undefined) return undefined;
    const snapshot = this.#o.snapshot();
    let set = this.#localLabels.get(snapshot);
    if (set === undefined) {
      set = metrics.labels(outboundIstioLabels(snapshot, null, null));
      this.#localLabels.set(snapshot, set);
    }
    return set;
  }

  /**
   * The `host:port` a gateway route sends the request to (with the route's timeout, 0 for none), a
   * redirect to https, or why there is none.
   */
  #gatewayDestination(
    snapshot: RuntimeSnapshot,
    routeName: string | undefined,
    authority: string,
    path: string,
  ): { host: string; port: number; timeoutMs: number } | { reason: string } | { redirect: true } {
    const rc = routeName === undefined ? undefined : snapshot.routes[routeName];
    if (rc === undefined) return { reason: `no route configuration ${routeName}` };
    const s = selectRoute(rc, authority, path);
    if (!s.ok) return { reason: s.reason };
    if (s.virtualHost.httpsRedirect) return { redirect: true };
    return { ...this.#weighted.pick(s.route.name, s.route.destinations), timeoutMs: s.route.timeoutMs ?? 0 };
  }

  #local(kind: LocalReplyKind, status: number, body: string, peer: string): Route {
    this.#observer.localReply(kind);
    this.#log.debug("outbound local reply", { peer, status, reason: body });
    return { local: true, status, body };
  }

  /** Sweeps the pools' idle connections, and forgets pools unused for a minute. */
  sweep(now: number): void {
    for (const [key, pool] of this.#pools) {
      pool.sweep(now);
      if (pool.openCount === 0 && now - pool.lastUsed > 60_000) {
        this.#gen++;
        this.#pools.delete(key);
        this.#labels.delete(key);
      }
    }
  }

  /** Closes every pool; resolves when their connections' operations have finished. */
  close(): Promise<void> {
    const closed = [...this.#pools.values()].map((p) => p.close());
    this.#pools.clear();
    this.#gen++;
    return Promise.all(closed).then(() => {});
  }
}
