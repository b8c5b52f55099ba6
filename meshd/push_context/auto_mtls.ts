/**
 * The push context's part of automatic mutual TLS: per endpoint, the service ports at which its server
 * accepts no mutual TLS (shared/policy/auto_mtls.ts, Istio's EDS mtlsChecker). It depends on
 * PeerAuthentication and the ports only, never on the proxied flag, so a connect-only change (incremental.ts)
 * keeps it.
 *
 * @module
 */
import {
  type EffectiveMtlsMode,
  effectivePeerAuthentication,
  mtlsDisabledPorts,
  type PeerAuthenticationPolicy,
} from "../../shared/mod.ts";

/** What a workload view holds of its inbound modes (views.ts's WorkloadView). */
export interface InboundModes {
  readonly inboundMtls: readonly { readonly port: number; readonly mode: EffectiveMtlsMode }[];
  readonly defaultMtls: { readonly mode: EffectiveMtlsMode };
}

/** An endpoint before automatic mTLS: its service port to endpoint port map. */
type Ported = { readonly ports: Readonly<Record<number, number>> };

/** The effective inbound mode of a workload's port: its own (a bound port), else the workload's default. */
export function workloadModeAt(w: InboundModes, port: number): EffectiveMtlsMode {
  return (w.inboundMtls.find((m) => m.port === port) ?? w.defaultMtls).mode;
}

/**
 * `endpoint` of the workload `w` with its `mtlsDisabledPorts` (shared's {@link mtlsDisabledPorts});
 * none when it has no workload.
 */
export function withWorkloadMtls<T extends Ported>(
  w: InboundModes | undefined,
  endpoint: T,
): T & { mtlsDisabledPorts: number[] } {
  const disabled = w === undefined ? [] : mtlsDisabledPorts(endpoint.ports, (p) => workloadModeAt(w, p));
  return { ...endpoint, mtlsDisabledPorts: disabled };
}

/**
 * For a ServiceEntry's inline endpoints: a function giving an endpoint with its `mtlsDisabledPorts`.
 * Its labels in the ServiceEntry's namespace select PeerAuthentications as a workload's would (Istio's
 * mtlsChecker uses the endpoint's labels and namespace); its ports are bound to the service, so
 * port-level modes apply.
 */
export function inlineMtls(
  policies: readonly PeerAuthenticationPolicy[],
  rootNamespace: string,
): <T extends Ported & { labels: Readonly<Record<string, string>> }>(
  namespace: string,
  endpoint: T,
) => T & { mtlsDisabledPorts: number[] } {
  return (namespace, endpoint) => {
    const modeAt = (port: number) =>
      effectivePeerAuthentication({
        namespace,
        labels: { ...endpoint.labels },
        port,
        portBoundToService: true,
        policies,
        rootNamespace,
      }).mode;
    return { ...endpoint, mtlsDisabledPorts: mtlsDisabledPorts(endpoint.ports, modeAt) };
  };
}
