/**
 * The route configurations of each gateway workload in the push context (Istio's gateway RDS over
 * shared's gatewayRouteConfigurations).
 *
 * @module
 */
import {
  gatewayRouteConfigurations,
  type GatewaySpec,
  type NamedSpec,
  type RouteConfiguration,
  type TlsCredential,
  type VirtualServiceSpec,
} from "../../shared/mod.ts";
import type { ServiceView, WorkloadView } from "./views.ts";

/**
 * The route configurations of a gateway workload (shared's gatewayRouteConfigurations): bind ports
 * from the targetPorts of the services that select it, destination ports from single-port services,
 * credentials from the Secrets of the workload's own namespace (as Istio). Skipped servers go to `warn`.
 */
export function gatewayRoutesOf(
  workload: WorkloadView,
  config: {
    gateways: readonly NamedSpec<GatewaySpec>[];
    virtualServices: readonly NamedSpec<VirtualServiceSpec>[];
    services: readonly ServiceView[];
    credentials: ReadonlyMap<string, TlsCredential>;
    scopeGatewayToNamespace: boolean;
  },
  warn: (message: string) => void,
): RouteConfiguration[] {
  return gatewayRouteConfigurations(workload, config, {
    scopeToNamespace: config.scopeGatewayToNamespace,
    targetPortOf: (port) => {
      for (const s of config.services) {
        for (const e of s.endpoints) {
          if (e.workload === workload.key && e.ports[port] !== undefined) return e.ports[port];
        }
      }
      return undefined;
    },
    defaultPortOf: (host) => {
      const s = config.services.find((s) => s.hosts.includes(host));
      return s?.ports.length === 1 ? s.ports[0].number : undefined;
    },
    credentialOf: (name) => {
      const c = config.credentials.get(`${workload.namespace}/${name}`);
      return c && { certificate: c.certChainPem !== "", ca: c.caPem !== "" };
    },
    onSkip: (s) =>
      warn(
        `Gateway ${s.gateway} spec.servers[${s.server}] (port ${s.port}) is not served on gateway ` +
          `${workload.key}: ${s.reason}`,
      ),
    onSkipRoute: (s) =>
      warn(`VirtualService ${s.virtualService} spec.tls[${s.rule}] on gateway ${workload.key}: ${s.reason}`),
  });
}
