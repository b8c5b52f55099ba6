/**
 * Carries out ./dispatch.ts's decision for a captured connection that is not served as HTTP/1.1:
 * - TCP to a service: an endpoint round robin (./balancer.ts; the very endpoint when the application
 *   dialled a pod IP), over mutual TLS with secure naming when it is proxied (automatic mTLS, the
 *   dial of ./endpoint_pool.ts: chain to the mesh roots, server URI SAN = the endpoint's identity),
 *   plain text when not; one upstream connection per downstream connection (no pooling for TCP);
 * - PassthroughCluster: plain text to the original destination;
 * - BlackHoleCluster: closed at once;
 * - HTTP2, GRPC and GRPC-WEB ports: the listener's HTTP entry, which serves h2c (prior knowledge) or
 *   HTTP/1.1 by the first bytes;
 * - auto-detection (UNKNOWN ports): the first bytes (shared/protocol/detect.ts) pick HTTP (either
 *   version, the listener's HTTP entry) or TLS, else TCP. Istio's `protocolDetectionTimeout` semantics: by default (0) the proxy
 *   waits for the client's first bytes without limit (a server-first protocol on an undeclared port
 *   hangs, as Istio documents: declare such ports); with a timeout, a connection that has sent too
 *   little by then is TCP.
 * The bytes flow through ../tcp/relay.ts (half-close, backpressure, reset propagation).
 *
 * @module
 */
import type net from "node:net";
import type { Log } from "../http/session_types.ts";
import { type RuntimeSnapshot, settingsInForce } from "../runtime/snapshot.ts";
import { type OriginalDestination, originalDestination } from "../capture/original_destination.ts";
import { pauseReading, relay, type RelayResult } from "../tcp/relay.ts";
import { type DetectedProtocol, detectProtocol } from "../../shared/protocol/detect.ts";
import { dialsMtls } from "../../shared/policy/auto_mtls.ts";
import { RoundRobin, WeightedRoundRobin } from "./balancer.ts";
import { resolveService } from "./resolve.ts";
import { meshTcpRouteName } from "../../shared/routing/mesh_tcp_routes.ts";
import { DialError, mtlsDialer, plainDialer } from "./endpoint_pool.ts";
import { MESH_TCP_ALPN } from "../tls/mesh_alpn.ts";
import {
  BLACKHOLE_CLUSTER,
  dispatchOf,
  type OutboundTrafficPolicy,
  PASSTHROUGH_CLUSTER,
  type ServiceTarget,
} from "./dispatch.ts";
import type { OutboundObserver } from "./outbound_stats.ts";
import { concat } from "./downstream.ts";

/**
 * The handler of TLS ports, filled by the TLS passthrough work of issue 16 (item 5). It returns true
 * when it took the connection (with the bytes sniffed so far unshifted); absent or false: the
 * connection is carried as opaque TCP to the service (over mutual TLS to a proxied endpoint, where the
 * inbound side applies its L4 rules).
 */
export interface OutboundProtocolHandlers {
  /** TLS and HTTPS ports, and a ClientHello sniffed on an UNKNOWN port (routing by SNI). */
  tlsPassthrough?(socket: net.Socket, target: ServiceTarget): boolean;
  /**
   * A connection to no service address (`destination`), or whose original destination is unknown
   * (undefined; it was sniffed as TLS): a ClientHello whose SNI names a ServiceEntry host goes there
   * (Istio's `0.0.0.0:<port>` listener with `server_names` filter chains, ./tls_passthrough.ts). True
   * when it took the connection; it calls `fallback` (passthrough, BlackHole, refusal) when the
   * connection turns out to be for no such host.
   */
  tlsBySni?(socket: net.Socket, destination: OriginalDestination | undefined, fallback: () => void): boolean;
}

/** Settings of an {@link OutboundTcp}. */
export interface OutboundTcpOptions {
  snapshot(): RuntimeSnapshot;
  log: Log;
  observer: OutboundObserver;
  /** Upstream connect timeout, ms. Default 10 s (Envoy's connect_timeout in Istio). */
  connectTimeoutMs?: number;
  /** No byte either way for this long closes both sides, ms; 0: never. Default 1 h (Envoy tcp_proxy). */
  idleTimeoutMs?: number;
  /** Istio's MeshConfig.protocolDetectionTimeout, ms; 0 (Istio's default): wait for the first bytes. */
  protocolDetectionTimeoutMs?: number;
  handlers?: OutboundProtocolHandlers;
  /** Istio's MeshConfig.outboundTrafficPolicy.mode; default: the snapshot's settings (meshd's mesh config). */
  outboundTrafficPolicy?: OutboundTrafficPolicy;
  /** The outbound listener's port (a connection to it is never passed through). */
  listenerPort(): number;
}

/** Outbound TCP proxying of one listener. */
export class OutboundTcp {
  readonly #o: OutboundTcpOptions;
  readonly #rr = new RoundRobin();
  readonly #weighted = new WeightedRoundRobin();
  readonly #live = new Set<net.Socket>();

  constructor(options: OutboundTcpOptions) {
    this.#o = options;
  }

  /** Connections being sniffed, dialled or relayed. */
  get activeCount(): number {
    return this.#live.size;
  }

  /** Destroys every connection it holds. */
  close(): void {
    for (const s of this.#live) s.destroy();
    this.#live.clear();
  }

  #track(socket: net.Socket): void {
    this.#live.add(socket);
    socket.once("close", () => this.#live.delete(socket));
  }

  /**
   * Serves one accepted connection by its original destination (./dispatch.ts): `serveHttp` (the
   * listener's HTTP entry: HTTP/1.1 routed by Host as before capture, or h2c) for HTTP, HTTP2 and GRPC
   * ports; TCP, passthrough or closed otherwise. When
   * the original destination cannot be read (no `--allow-ffi`), HTTP is still served by Host and
   * anything else is closed with the reason logged.
   */
  accept(raw: net.Socket, serveHttp: () => void): void {
    const found = originalDestination(raw);
    if (found.kind === "direct") return serveHttp();
    if (found.kind === "unknown") {
      return this.sniff(raw, (p) => {
        if (p === "http1" || p === "http2") return serveHttp();
        const refuse = () =>
          this.refuse(
            raw,
            `original destination unknown (${found.reason}): a ${p} connection cannot be routed`,
          );
        if (p === "tls" && this.#o.handlers?.tlsBySni?.(raw, undefined, refuse)) return;
        refuse();
      });
    }
    const snapshot = this.#o.snapshot();
    const d = dispatchOf(snapshot, found.destination, {
      listenerPort: this.#o.listenerPort(),
      ownAddresses: snapshot.workload?.addresses ?? [],
      policy: this.#o.outboundTrafficPolicy ?? settingsInForce(snapshot).outboundTrafficPolicy,
    });
    switch (d.path) {
      case "http":
        return serveHttp();
      case "tcp":
        return this.toService(raw, d.target);
      case "http2":
        // The listener's HTTP entry: HTTP/2 with prior knowledge (h2c) or HTTP/1.1, by the first bytes.
        return serveHttp();
      case "tls":
        return this.tls(raw, d.target);
      case "passthrough":
      case "blackhole": {
        const fallback = () =>
          d.path === "passthrough"
            ? this.passthrough(raw, d.destination)
            : this.blackhole(raw, d.destination);
        if (this.#o.handlers?.tlsBySni?.(raw, d.destination, fallback)) return;
        return fallback();
      }
      case "sniff":
        return this.sniff(raw, (p) => {
          if (p === "http1" || p === "http2") return serveHttp();
          if (p === "tls") return this.tls(raw, d.target);
          this.toService(raw, d.target);
        });
    }
  }

  /** A TLS/HTTPS port: its handler, else opaque TCP. */
  tls(raw: net.Socket, target: ServiceTarget): void {
    if (this.#o.handlers?.tlsPassthrough?.(raw, target)) return;
    this.toService(raw, target);
  }

  /**
   * Reads the first bytes, puts them back, and calls `then` with what they speak (`tcp` also when the
   * detection timeout passes first). A connection that closes before deciding is dropped.
   */
  sniff(raw: net.Socket, then: (protocol: Exclude<DetectedProtocol, "more">) => void): void {
    this.#track(raw);
    const chunks: Uint8Array[] = [];
    let size = 0;
    let done = false;
    const timeoutMs = this.#o.protocolDetectionTimeoutMs ?? 0;
    const timer = timeoutMs > 0 ? setTimeout(() => decide("tcp"), timeoutMs) : undefined;
    const decide = (protocol: Exclude<DetectedProtocol, "more">) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      raw.off("data", onData);
      raw.off("end", onEnd);
      pauseReading(raw);
      if (size > 0) raw.unshift(concat(chunks, size));
      this.#live.delete(raw);
      then(protocol);
    };
    const onData = (chunk: Uint8Array) => {
      chunks.push(chunk);
      size += chunk.length;
      const p = detectProtocol(concat(chunks, size));
      if (p !== "more") decide(p);
    };
    // FIN before a decision: what came is all there is (TCP, or nothing).
    const onEnd = () => (size > 0 ? decide("tcp") : raw.destroy());
    raw.on("data", onData);
    raw.once("end", onEnd);
    raw.once("close", () => clearTimeout(timer));
  }

  /** Closes a captured connection that cannot be served, saying why in the log. */
  refuse(raw: net.Socket, reason: string, fields: Record<string, unknown> = {}): void {
    this.#o.log.warn("outbound connection closed", { peer: peerOf(raw), reason, ...fields });
    raw.destroy();
  }

  /** BlackHoleCluster (REGISTRY_ONLY and a destination outside the registry): closed at once. */
  blackhole(raw: net.Socket, destination: OriginalDestination): void {
    this.#o.observer.tcp(BLACKHOLE_CLUSTER, "downstream_cx_total", 1);
    this.#o.observer.tcp(BLACKHOLE_CLUSTER, "downstream_cx_no_route", 1);
    this.refuse(raw, "destination not in the service registry (outboundTrafficPolicy REGISTRY_ONLY)", {
      destination: `${destination.address}:${destination.port}`,
    });
  }

  /** PassthroughCluster: plain text to the original destination. */
  passthrough(raw: net.Socket, destination: OriginalDestination): void {
    const target = `${destination.address}:${destination.port}`;
    this.#connect(raw, PASSTHROUGH_CLUSTER, target, () => {
      this.#o.observer.upstreamConnection(false);
      return plainDialer(destination.address, destination.port, this.#timeout())();
    });
  }

  /**
   * TCP to an endpoint of the service (the dialled one for a pod IP), or of the destination that the
   * VirtualService `tcp` rule bound to mesh for the service port names.
   */
  toService(raw: net.Socket, dispatched: ServiceTarget): void {
    const snapshot = this.#o.snapshot();
    const t = this.#tcpRoute(raw, dispatched, snapshot);
    if (t === undefined) return;
    const choice = t.endpoint !== undefined
      ? { endpoint: t.endpoint, port: t.endpoint.ports[String(t.port.number)] }
      : this.#rr.pickEndpoint(t.key, t.service.endpoints, t.port.number);
    if (choice === undefined) {
      this.#o.observer.tcp(t.cluster, "downstream_cx_total", 1);
      this.#o.observer.tcp(t.cluster, "downstream_cx_no_route", 1);
      this.refuse(raw, `no healthy upstream: service ${t.key} has no endpoint for port ${t.port.number}`);
      return;
    }
    const { endpoint, port } = choice;
    const target = `${endpoint.address}:${port}`;
    const cert = snapshot.certificate;
    const mtls = dialsMtls(endpoint, t.port.number);
    if (mtls && cert === undefined) {
      this.#o.observer.tcp(t.cluster, "downstream_cx_total", 1);
      this.refuse(
        raw,
        `${target} of ${t.key} needs mutual TLS and the proxy has no workload certificate yet`,
      );
      return;
    }
    this.#connect(raw, t.cluster, `${t.key} ${target}`, () => {
      this.#o.observer.upstreamConnection(mtls);
      if (!mtls) return plainDialer(endpoint.address, port, this.#timeout())();
      // The current certificate per connection, so that rotation reaches new connections.
      const c = this.#o.snapshot().certificate ?? cert!;
      return mtlsDialer(
        {
          host: endpoint.address,
          port,
          cert: c,
          identity: endpoint.identity,
          timeoutMs: this.#timeout(),
          alpn: MESH_TCP_ALPN,
        },
        true,
      )();
    });
  }

  /**
   * The target after the VirtualService `tcp` rule bound to mesh for a service address and port
   * (`mesh.tcp.<port>.<service key>`, shared/routing/mesh_tcp_routes.ts: one route of SNI `*`, weighted
   * destinations), else `t`; undefined when the rule's destination is no service here (refused).
   */
  #tcpRoute(raw: net.Socket, t: ServiceTarget, snapshot: RuntimeSnapshot): ServiceTarget | undefined {
    if (t.endpoint !== undefined) return t;
    const route = snapshot.routes[meshTcpRouteName(t.port.number, t.key)]?.tlsRoutes?.[0];
    if (route === undefined) return t;
    const r = resolveService(
      this.#weighted.pick(route.name, route.destinations),
      snapshot.workload?.namespace,
      snapshot,
    );
    if (!r.ok) {
      this.#o.observer.tcp(t.cluster, "downstream_cx_total", 1);
      this.#o.observer.tcp(t.cluster, "downstream_cx_no_route", 1);
      this.refuse(raw, `VirtualService tcp route ${route.name}: ${r.reason}`);
      return undefined;
    }
    return { key: r.key, service: r.service, port: r.port, cluster: `outbound|${r.port.number}||${r.host}` };
  }

  #timeout(): number {
    return this.#o.connectTimeoutMs ?? 10_000;
  }

  /** Dials, then relays; a failed dial closes the downstream with the reason logged. */
  #connect(raw: net.Socket, cluster: string, target: string, dial: () => Promise<net.Socket>): void {
    const observer = this.#o.observer;
    const peer = peerOf(raw);
    observer.tcp(cluster, "downstream_cx_total", 1);
    this.#track(raw);
    // Bytes the client sends while the upstream connects wait in the socket (the relay resumes it).
    pauseReading(raw);
    dial().then((upstream) => {
      if (raw.destroyed) {
        upstream.destroy();
        return;
      }
      this.#track(upstream);
      let rx = 0, tx = 0;
      relay(raw, upstream, {
        idleTimeoutMs: this.#o.idleTimeoutMs,
        onBytes: (direction, n) => {
          if (direction === "downstream_to_upstream") rx += n;
          else tx += n;
        },
      }).then((r: RelayResult) => {
        observer.tcp(cluster, "downstream_cx_rx_bytes_total", rx);
        observer.tcp(cluster, "downstream_cx_tx_bytes_total", tx);
        if (r.end === "idle_timeout") observer.tcp(cluster, "idle_timeout", 1);
        this.#o.log.debug("outbound TCP connection ended", {
          peer,
          target,
          cluster,
          end: r.end,
          by: r.by,
          bytesFromDownstream: r.bytesFromDownstream,
          bytesFromUpstream: r.bytesFromUpstream,
          ...(r.error === undefined ? {} : { error: r.error }),
        });
      });
    }, (e: unknown) => {
      observer.tcp(cluster, "upstream_cx_connect_fail", 1);
      const kind = e instanceof DialError ? e.kind : "connect_failure";
      this.refuse(raw, (e as Error).message, { target, cluster, kind });
    });
  }
}

function peerOf(raw: net.Socket): string {
  return `${raw.remoteAddress}:${raw.remotePort}`;
}
