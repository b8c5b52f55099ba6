/**
 * The TLS of a gateway's HTTPS servers (Istio's "Secure Gateways"): SIMPLE and MUTUAL with
 * `credentialName`, the credential resource names a gateway needs, and why other modes are skipped
 * (pilot/pkg/model/gateway.go, credentials in the workload's namespace).
 *
 * @module
 */
import type { GatewaySpec } from "../api/types.gen.ts";
import { CA_SECRET_SUFFIX } from "../credentials/secret.ts";
import type { GatewayRouteOptions, RouteConfiguration, ServerTls } from "./route_configuration.ts";

/** The xDS (SDS) name of a gateway credential: `kubernetes://<secret name>`, as Istio. */
export function credentialResourceName(secretName: string): string {
  return `kubernetes://${secretName}`;
}

/** The credential resource names the route configurations use, sorted, without repeats. */
export function credentialNamesOf(configs: readonly RouteConfiguration[]): string[] {
  const names = new Set<string>();
  for (const rc of configs) {
    if (!rc.tls) continue;
    names.add(rc.tls.credentialName);
    if (rc.tls.caCredentialName) names.add(rc.tls.caCredentialName);
  }
  return [...names].sort();
}

export type GatewayServer = NonNullable<GatewaySpec["servers"]>[number];

/** The TLS settings of an HTTPS server, or why it is not served. */
export function serverTls(server: GatewayServer, options: GatewayRouteOptions): ServerTls | string {
  const tls = server.tls;
  const mode = tls?.mode ?? "PASSTHROUGH";
  if (mode !== "SIMPLE" && mode !== "MUTUAL") {
    return `tls.mode ${mode} is not supported (SIMPLE, MUTUAL and PASSTHROUGH only)`;
  }
  const names = tls!.credentialNames ?? [];
  if (names.length > 1) return "two credentialNames are not supported; use one credentialName";
  const secret = tls!.credentialName ?? names[0];
  if (!secret) {
    return "certificates from files (serverCertificate, tlsCertificates) are not supported; use credentialName";
  }
  const found = options.credentialOf?.(secret) ??
    (options.credentialOf ? undefined : { certificate: true, ca: true });
  if (!found || !found.certificate) {
    return `credentialName ${secret}: no Secret ${secret} with a certificate and key in the gateway workload's namespace`;
  }
  let caCredentialName = "";
  if (mode === "MUTUAL") {
    const caSecret = tls!.caCertCredentialName ?? secret + CA_SECRET_SUFFIX;
    const ca = options.credentialOf?.(caSecret) ??
      (options.credentialOf ? undefined : { certificate: false, ca: true });
    const fallback = tls!.caCertCredentialName === undefined && found.ca;
    if (!ca?.ca && !fallback) {
      return `MUTUAL needs a client CA: no Secret ${caSecret} with ca.crt or cacert` +
        (tls!.caCertCredentialName === undefined ? `, and no ca.crt in ${secret}` : "");
    }
    caCredentialName = credentialResourceName(tls!.caCertCredentialName ?? secret + CA_SECRET_SUFFIX);
  }
  return {
    mode,
    sniHosts: [...new Set(server.hosts.map((h) => h.slice(h.indexOf("/") + 1).toLowerCase()))].sort(),
    credentialName: credentialResourceName(secret),
    caCredentialName,
    minProtocolVersion: tls!.minProtocolVersion ?? "",
    maxProtocolVersion: tls!.maxProtocolVersion ?? "",
    subjectAltNames: [...tls!.subjectAltNames ?? []],
  };
}
