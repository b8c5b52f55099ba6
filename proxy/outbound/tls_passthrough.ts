/**
 * TLS passthrough: a client's own TLS goes, unterminated, to the destination its ClientHello's SNI
 * selects, byte for byte (../tcp/relay.ts, Envoy's tcp_proxy):
 *
 * - at a gateway's PASSTHROUGH server (Istio's "Ingress Gateway without TLS Termination"), the TLS
 *   route of the server ({@link gatewayTlsTarget}), after the gateway's AuthorizationPolicies as TCP
 *   rules (`ports`, `ipBlocks`, `connection.sni`; an HTTP-only ALLOW rule never matches);
 * - at a sidecar, for a connection captured towards no service address (../capture,
 *   ./dispatch.ts), the ServiceEntry host the SNI names ({@link sidecarTlsTarget}; wildcards too),
 *   as Istio's `0.0.0.0:<port>` listener of services without addresses; and a ServiceEntry with
 *   `resolution: DNS` and no endpoints, dialled by name. A TLS port of a service address (a VIP)
 *   is carried to an endpoint as opaque TCP by ./tcp_forward.ts, without looking at the SNI, as
 *   Envoy does.
 *
 * The upstream is an endpoint of the service, chosen round robin: a proxied one over the mesh's
 * mutual TLS with secure naming (the client's TLS inside it, as Istio's automatic mTLS), else plain
 * TCP. A ServiceEntry without endpoints is reached by name (`resolution: DNS`: its host; `NONE`: the
 * original destination when known, else the SNI name resolved by DNS). No route, no endpoint, a denial
 * or a failed connect closes the client's connection with a TCP reset, as Envoy closes a connection
 * that matches no filter chain or whose upstream fails.
 *
 * @module
 */
import type net from "node:net";
import type { Log } from "../http/session_types.ts";
import type { OriginalDestination as CapturedDestination } from "../capture/original_destination.ts";
import { inboundPoliciesOf } from "../filters/policies.ts";
import type { RouteConfiguration, RuntimeSnapshot } from "../runtime/snapshot.ts";
import { relay, type RelayResult } from "../tcp/relay.ts";
import { RoundRobin, WeightedRoundRobin } from "./balancer.ts";
import { type Dialer, mtlsDialer, plainDialer } from "./endpoint_pool.ts";
import { MESH_TCP_ALPN } from "../tls/mesh_alpn.ts";
import type { OutboundObserver } from "./outbound_stats.ts";
import { type Resolution, resolveService } from "./resolve.ts";
import { gatewayTlsTarget, hasSniRoutedPort, meshTlsRouteBySni, sidecarTlsTarget } from "./tls_targets.ts";
import { meshTlsRouteName } from "../../shared/routing/mesh_tls_routes.ts";
import { readClientHello } from "../tls/client_hello.ts";
import type { ServiceTarget } from "./dispatch.ts";
import { dialsMtls } from "../../shared/policy/auto_mtls.ts";

/** Settings of a {@link TlsPassthrough}. */
export interface TlsPassthroughOptions {
  /** The current runtime snapshot; read per connection. */
  snapshot(): RuntimeSnapshot;
  log: Log;
  observer: OutboundObserver;
  /** Upstream connect timeout (ms); default 10 s. */
  connectTimeoutMs?: number;
  /** Relay idle timeout (ms); default the relay's (Envoy tcp_proxy's 1 h). */
  idleTimeoutMs?: number;
}

/** Where the application meant to connect (the original destination of a redirected connection). */
export type OriginalDestination = Pick<CapturedDestination, "address" | "port">;

/** How to reach the chosen upstream. */
interface Upstream {
  dial: Dialer;
  mtls: boolean;
  /** `<service key> <address or name>:<port>`, for logs. */
  target: string;
}

/** Routes and relays passed-through TLS connections of one listener. */
export class TlsPassthrough {
  readonly #o: TlsPassthroughOptions;
  readonly #rr = new RoundRobin();
  readonly #weighted = new WeightedRoundRobin();
  readonly #relays = new Set<AbortController>();
  #closed = false;

  constructor(options: TlsPassthroughOptions) {
    this.#o = options;
  }

  /** Connections being relayed now. */
  get activeCount(): number {
    return this.#relays.size;
  }

  /**
   * A gateway connection whose SNI selected the PASSTHROUGH server `config`. The ClientHello must
   * still be unread in `raw` (unshifted).
   *
   * @param listenerPort the gateway port the client connected to (`ports` of the gateway's policies)
   */
  gateway(raw: net.Socket, config: RouteConfiguration, sni: string | undefined, listenerPort: number): void {
    const snapshot = this.#o.snapshot();
    const denied = this.#denial(snapshot, raw, sni, listenerPort);
    if (denied !== undefined) {
      this.#refuse(raw, "TLS passthrough connection denied", denied);
      return;
    }
    const r = gatewayTlsTarget(config, sni, snapshot.workload?.namespace, snapshot, this.#weighted);
    this.#forward(raw, r, sni, undefined, snapshot);
  }

  /**
   * A captured connection to a TLS or HTTPS port of a service's address (../outbound/dispatch.ts):
   * taken when the service is a ServiceEntry without endpoints and `resolution: DNS` (its host is
   * dialled, Envoy's STRICT_DNS cluster); false otherwise, and the caller carries it to an endpoint as
   * opaque TCP, as Envoy's tcp_proxy on a `<VIP>:<port>` listener does without looking at the SNI.
   */
  service(raw: net.Socket, target: ServiceTarget): boolean {
    const mesh = this.#o.snapshot().routes[meshTlsRouteName(target.port.number, target.key)];
    if (mesh !== undefined) {
      // VirtualService tls rules bound to mesh hold for this service port: its listener has only their
      // filter chains (Istio's tls.go adds the default chain only without a match), so an SNI that no
      // rule names is refused.
      this.#sniffed(raw, (hello, snapshot) => {
        const r = gatewayTlsTarget(mesh, hello?.sni, snapshot.workload?.namespace, snapshot, this.#weighted);
        this.#forward(raw, r, hello?.sni, undefined, snapshot);
      });
      return true;
    }
    const { service } = target;
    if (service.endpoints.length > 0 || service.resolution !== "DNS") return false;
    const host = service.hosts.find((h) => !h.startsWith("*"));
    if (host === undefined) return false;
    const snapshot = this.#o.snapshot();
    this.#forward(
      raw,
      { ok: true, key: target.key, service, port: target.port, host },
      undefined,
      undefined,
      snapshot,
    );
    return true;
  }

  /**
   * A captured connection to no service address, or whose original destination is unknown (then
   * already sniffed as TLS): its ClientHello's SNI picks a service host ({@link sidecarTlsTarget}).
   * With a destination, only when some service without addresses has a TLS/HTTPS port of the
   * destination's port (Istio builds `0.0.0.0:<port>` SNI filter chains only then; other
   * connections are not delayed): the SNI must name such a service, else `fallback` (passthrough or
   * BlackHole) takes the connection, as it does a ClientHello without SNI, bytes that are not TLS,
   * or no whole first record within 15 s (Istio's `continue_on_listener_filters_timeout`).
   *
   * @returns whether it took the connection
   */
  bySni(raw: net.Socket, destination: OriginalDestination | undefined, fallback: () => void): boolean {
    if (destination !== undefined && !hasSniRoutedPort(this.#o.snapshot(), destination.port)) return false;
    this.#sniffed(raw, (hello, snapshot) => {
      if (hello !== undefined) {
        const ns = snapshot.workload?.namespace;
        const routed = destination && meshTlsRouteBySni(snapshot, destination.port, hello.sni);
        let r = routed
          ? resolveService(this.#weighted.pick(routed.name, routed.destinations), ns, snapshot)
          : sidecarTlsTarget(hello.sni, ns, snapshot, destination?.port);
        // The SNI's service port has tls rules bound to mesh: Istio's listener has only their filter
        // chains there. With a destination they were matched above and missed; without one (no
        // capture), they are matched now.
        const rules = !routed && r.ok ? snapshot.routes[meshTlsRouteName(r.port.number, r.key)] : undefined;
        if (rules !== undefined && destination === undefined) {
          r = gatewayTlsTarget(rules, hello.sni, ns, snapshot, this.#weighted);
        }
        if ((r.ok && rules === undefined) || destination === undefined) {
          this.#forward(raw, r, hello.sni, destination, snapshot);
          return;
        }
      }
      fallback();
    });
    return true;
  }

  /**
   * Reads the ClientHello without consuming it, then `then` with it (undefined when the bytes are not
   * one whole ClientHello in time); nothing when the client closed first.
   */
  #sniffed(
    raw: net.Socket,
    then: (hello: { sni: string | undefined } | undefined, snapshot: RuntimeSnapshot) => void,
  ): void {
    readClientHello(raw).then((hello) => {
      if (hello.status === "closed") return;
      then(hello.status === "done" ? hello : undefined, this.#o.snapshot());
    }).catch((e: unknown) => this.#refuse(raw, "TLS passthrough failed", String(e)));
  }

  /** Ends every relay (both sides closed) and refuses what is still connecting. */
  close(): void {
    this.#closed = true;
    for (const c of this.#relays) c.abort();
    this.#relays.clear();
  }

  /** Why the gateway's AuthorizationPolicies refuse the connection, or undefined. */
  #denial(
    snapshot: RuntimeSnapshot,
    raw: net.Socket,
    sni: string | undefined,
    port: number,
  ): string | undefined {
    const policies = inboundPoliciesOf(snapshot);
    if (policies.error !== null) return `policies not usable: ${policies.error}`;
    if (policies.authz === null) return undefined;
    const d = policies.authz.evaluateConnection({
      port,
      sourceIp: raw.remoteAddress,
      destinationIp: raw.localAddress,
      ...(sni === undefined ? {} : { sni }),
    });
    if (d.allowed) return undefined;
    return d.policy === undefined
      ? "no ALLOW policy matched"
      : `denied by ${d.policy.namespace}/${d.policy.name}${
        d.ruleIndex === undefined ? "" : ` rule ${d.ruleIndex}`
      }`;
  }

  #forward(
    raw: net.Socket,
    r: Resolution,
    sni: string | undefined,
    original: OriginalDestination | undefined,
    snapshot: RuntimeSnapshot,
  ): void {
    if (!r.ok) {
      this.#o.observer.downstreamTls("no_filter_chain_match");
      this.#refuse(raw, "TLS passthrough connection refused", r.reason);
      return;
    }
    const observer = this.#o.observer;
    // Envoy's tcp_proxy statistics, with the cluster as stat prefix.
    const cluster = `outbound|${r.port.number}||${r.service.hosts[0] ?? r.host}`;
    observer.tcp(cluster, "downstream_cx_total", 1);
    const upstream = this.#upstreamOf(r, sni, original, snapshot);
    if (typeof upstream === "string") {
      observer.tcp(cluster, "downstream_cx_no_route", 1);
      this.#refuse(raw, "TLS passthrough connection refused", upstream);
      return;
    }
    upstream.dial().then(
      (socket) => {
        if (this.#closed || raw.destroyed) {
          socket.destroy();
          raw.destroy();
          return;
        }
        observer.upstreamConnection(upstream.mtls);
        const control = new AbortController();
        this.#relays.add(control);
        let rx = 0, tx = 0;
        relay(raw, socket, {
          idleTimeoutMs: this.#o.idleTimeoutMs,
          signal: control.signal,
          onBytes: (direction, n) => {
            if (direction === "downstream_to_upstream") rx += n;
            else tx += n;
          },
        }).then((result: RelayResult) => {
          this.#relays.delete(control);
          observer.tcp(cluster, "downstream_cx_rx_bytes_total", rx);
          observer.tcp(cluster, "downstream_cx_tx_bytes_total", tx);
          if (result.end === "idle_timeout") observer.tcp(cluster, "idle_timeout", 1);
          this.#o.log.debug("TLS passthrough connection ended", { target: upstream.target, ...result });
        });
      },
      (err: Error) => {
        observer.tcp(cluster, "upstream_cx_connect_fail", 1);
        this.#refuse(raw, "TLS passthrough upstream failed", `${upstream.target}: ${err.message}`);
      },
    );
  }

  /** The upstream of a resolved service port, or why there is none. */
  #upstreamOf(
    r: Resolution & { ok: true },
    sni: string | undefined,
    original: OriginalDestination | undefined,
    snapshot: RuntimeSnapshot,
  ): Upstream | string {
    const timeout = this.#o.connectTimeoutMs ?? 10_000;
    const { service, port } = r;
    if (service.endpoints.length === 0) {
      // A ServiceEntry without endpoints: DNS resolves its host (Envoy's STRICT_DNS cluster), NONE
      // goes where the client was going (ORIGINAL_DST) or, when that is unknown, where its SNI resolves.
      const wildcard = r.host.startsWith("*");
      const host = service.resolution === "DNS" && !wildcard ? r.host : original?.address ?? sni;
      if (host === undefined || (service.resolution !== "DNS" && service.resolution !== "NONE")) {
        return `no healthy upstream: service ${r.key} has no endpoint for port ${port.number}`;
      }
      const to = original?.address === host ? original.port : port.targetPort || port.number;
      return { dial: plainDialer(host, to, timeout), mtls: false, target: `${r.key} ${host}:${to}` };
    }
    const choice = this.#rr.pickEndpoint(r.key, service.endpoints, port.number);
    if (choice === undefined) {
      return `no healthy upstream: service ${r.key} has no endpoint for port ${port.number}`;
    }
    const { endpoint } = choice;
    const target = `${r.key} ${endpoint.address}:${choice.port}`;
    if (!dialsMtls(endpoint, port.number)) {
      return { dial: plainDialer(endpoint.address, choice.port, timeout), mtls: false, target };
    }
    const cert = snapshot.certificate;
    if (cert === undefined) return `${target} needs mutual TLS and the proxy has no workload certificate yet`;
    return {
      dial: mtlsDialer({
        host: endpoint.address,
        port: choice.port,
        cert,
        identity: endpoint.identity,
        timeoutMs: timeout,
        alpn: MESH_TCP_ALPN,
      }, true),
      mtls: true,
      target,
    };
  }

  #refuse(raw: net.Socket, message: string, reason: string): void {
    this.#o.log.warn(message, { peer: `${raw.remoteAddress}:${raw.remotePort}`, reason });
    if (!raw.destroyed) raw.resetAndDestroy();
  }
}
