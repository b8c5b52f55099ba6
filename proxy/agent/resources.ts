/**
 * The resource types the agent subscribes to, and how one xDS resource (a
 * google.protobuf.Any) becomes a value of the runtime snapshot: decoded with the shared descriptors,
 * then checked. Anything that fails throws a {@link ResourceError} whose message names the resource
 * and the field, which the ADS client sends back as its NACK's error_detail.
 *
 * @module
 */
import { type ProxySettings, proxySettingsOf } from "../../shared/proxy_settings/settings.ts";
import { isIP } from "node:net";
import { RESOURCE_TYPES, typeUrlOf } from "../../shared/proto/resources.ts";
import { tryParseSpiffeId } from "../../shared/identity/spiffe.ts";
import type { EndpointInfo, PortMtls, ServiceInfo, WorkloadInfo } from "../runtime/snapshot.ts";
import {
  decodeMessage,
  type MessageOf,
  type PortMtlsMessage,
  type RouteConfigurationMessage,
  type ServerTlsMessage,
  type ServiceMessage,
  type TlsCredentialMessage,
  type WorkloadMessage,
} from "./messages.ts";

/** The resource kinds, by their RESOURCE_TYPES key. */
export type ResourceKind = keyof typeof RESOURCE_TYPES;

/** The kinds in subscription order, with their type URLs (the same as meshd's TYPE_URLS). */
export const SUBSCRIBED: readonly { kind: ResourceKind; typeUrl: string }[] = Object.freeze(
  (["workload", "service", "authorization", "jwtPolicy", "routeConfiguration", "tlsCredential"] as const).map(
    (kind) => ({
      kind,
      typeUrl: typeUrlOf(RESOURCE_TYPES[kind]),
    }),
  ),
);

/** The kind of a type URL, or undefined for one the agent does not handle. */
export function kindOf(typeUrl: string): ResourceKind | undefined {
  return SUBSCRIBED.find((s) => s.typeUrl === typeUrl)?.kind;
}

/** A resource that cannot be used; the message goes into the NACK. */
export class ResourceError extends Error {
  /** @param resource the xDS resource name; @param reason what is wrong */
  constructor(readonly resource: string, reason: string) {
    super(`resource ${JSON.stringify(resource)}: ${reason}`);
    this.name = "ResourceError";
  }
}

/** A decoded, checked resource value of a kind; a plain-text route configuration has no `tls`. */
export type ResourceValue<K extends ResourceKind> = K extends "workload" ? WorkloadInfo
  : K extends "service" ? ServiceInfo
  : K extends "routeConfiguration" ? PlainOrTlsRoute
  : MessageOf[K];

/**
 * A route configuration as the runtime takes it: `tls` only when the server terminates or passes
 * TLS, with its mode checked; `tlsRoutes` only when it passes TLS through.
 */
type PlainOrTlsRoute = Omit<RouteConfigurationMessage, "tls" | "tlsRoutes"> & {
  tls?: Omit<ServerTlsMessage, "mode"> & { mode: "SIMPLE" | "MUTUAL" | "PASSTHROUGH" };
  tlsRoutes?: RouteConfigurationMessage["tlsRoutes"];
};

/** Every decoded, checked value, by kind: what {@link decodeXdsResource} returns for each. */
type ResourceValues = { [K in ResourceKind]: ResourceValue<K> };

const MODES: ReadonlySet<string> = new Set<PortMtls["mode"]>(["DISABLE", "PERMISSIVE", "STRICT"]);
const isMode = (mode: string): mode is PortMtls["mode"] => MODES.has(mode);
const ACTIONS = new Set(["ALLOW", "DENY", "AUDIT", "CUSTOM"]);

/**
 * Decodes and checks one resource.
 *
 * @param any the resource's google.protobuf.Any (`type_url`, `value`)
 * @throws {ResourceError}
 */
export function decodeXdsResource<K extends ResourceKind>(
  kind: K,
  name: string,
  any: { type_url?: string; value?: Uint8Array } | null | undefined,
): ResourceValue<K> {
  const fail = (reason: string): never => {
    throw new ResourceError(name, reason);
  };
  const typeUrl = typeUrlOf(RESOURCE_TYPES[kind]);
  if (!any) return fail("no resource body");
  if (any.type_url !== typeUrl) fail(`type_url ${JSON.stringify(any.type_url)} is not ${typeUrl}`);
  const decode = <T extends ResourceKind>(k: T): MessageOf[T] => {
    try {
      return decodeMessage(k, any.value ?? new Uint8Array());
    } catch (e) {
      return fail(`cannot decode ${RESOURCE_TYPES[kind]}: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  const namespaced = <T extends { name: string; namespace: string }>(d: T): T => {
    if (!d.name || !d.namespace) fail("name and namespace are required");
    if (`${d.namespace}/${d.name}` !== name) fail(`its namespace/name is ${d.namespace}/${d.name}`);
    return d;
  };
  // Each kind's decoder, so that the lookup by `kind` below gives ResourceValue<K> without a cast.
  const decoders: { [T in ResourceKind]: () => ResourceValues[T] } = {
    routeConfiguration: () => routeConfiguration(decode("routeConfiguration"), name, fail),
    tlsCredential: () => tlsCredential(decode("tlsCredential"), name, fail),
    workload: () => workload(namespaced(decode("workload")), fail),
    service: () => service(namespaced(decode("service")), fail),
    authorization: () => {
      const d = namespaced(decode("authorization"));
      if (!ACTIONS.has(d.action)) {
        fail(`action ${JSON.stringify(d.action)} is not one of ${[...ACTIONS].join(", ")}`);
      }
      return d;
    },
    jwtPolicy: () => {
      const d = namespaced(decode("jwtPolicy"));
      for (const [i, p] of d.providers.entries()) {
        if (!p.issuer) fail(`providers[${i}].issuer is required`);
      }
      return d;
    },
  };
  return decoders[kind]();
}

/**
 * Route configurations are named `http.<port>` or `https.<port>.<port name>.<gateway>.<namespace>`
 * and carry no namespace (as Istio's RDS names). Plain-text ones have no `tls`.
 */
function routeConfiguration(
  d: RouteConfigurationMessage,
  name: string,
  fail: (r: string) => never,
): PlainOrTlsRoute {
  if (d.name !== name) fail(`its name is ${JSON.stringify(d.name)}`);
  port(d.port, "port", fail);
  port(d.bindPort, "bindPort", fail);
  const { tls, tlsRoutes, ...plain } = d;
  let checkedTls: PlainOrTlsRoute["tls"];
  if (tls === null && tlsRoutes.length > 0) fail("tlsRoutes without tls.mode PASSTHROUGH");
  if (tls !== null) {
    const { mode } = tls;
    if (mode !== "SIMPLE" && mode !== "MUTUAL" && mode !== "PASSTHROUGH") {
      return fail(`tls.mode ${JSON.stringify(mode)} is not SIMPLE, MUTUAL or PASSTHROUGH`);
    }
    checkedTls = { ...tls, mode };
    if (mode === "PASSTHROUGH") {
      if (tlsRoutes.length === 0) fail("tls.mode PASSTHROUGH without tlsRoutes");
      for (const [i, r] of tlsRoutes.entries()) {
        if (r.sniHosts.length === 0) fail(`tlsRoutes[${i}].sniHosts is empty`);
        if (r.destinations.length === 0) fail(`tlsRoutes[${i}].destinations is empty`);
        for (const [j, dst] of r.destinations.entries()) {
          port(dst.port, `tlsRoutes[${i}].destinations[${j}].port`, fail);
        }
      }
      return { ...plain, tls: checkedTls, tlsRoutes };
    }
    if (tlsRoutes.length > 0) fail(`tlsRoutes with tls.mode ${mode}`);
    if (!tls.credentialName) fail("tls.credentialName is required");
    if (tls.mode === "MUTUAL" && !tls.caCredentialName) {
      fail("tls.caCredentialName is required for MUTUAL");
    }
    if (tls.sniHosts.length === 0) fail("tls.sniHosts is empty");
  }
  for (const [i, v] of d.virtualHosts.entries()) {
    for (const [j, r] of v.routes.entries()) {
      for (const [k, m] of r.matches.entries()) {
        if (m.regex === "") continue;
        try {
          new RegExp(m.regex);
        } catch (e) {
          fail(
            `virtualHosts[${i}].routes[${j}].matches[${k}].regex: ${
              e instanceof Error ? e.message : String(e)
            }`,
          );
        }
      }
      if (r.destinations.length === 0) {
        fail(`virtualHosts[${i}].routes[${j}].destinations is empty`);
      }
    }
  }
  return checkedTls === undefined ? plain : { ...plain, tls: checkedTls };
}

/** A credential named as requested, with a PEM certificate and key together, or a CA, or both. */
function tlsCredential(
  d: TlsCredentialMessage,
  name: string,
  fail: (r: string) => never,
): TlsCredentialMessage {
  if (d.name !== name) fail(`its name is ${JSON.stringify(d.name)}`);
  const cert = d.certificateChain !== "", key = d.privateKey !== "";
  if (cert !== key) fail("certificateChain and privateKey come together");
  if (!cert && d.caCertificates === "") fail("holds neither a certificate nor a CA");
  if (cert && !d.certificateChain.includes("-----BEGIN CERTIFICATE-----")) {
    fail("certificateChain is not PEM");
  }
  return d;
}

function port(n: unknown, field: string, fail: (r: string) => never, allowZero = false): number {
  if (typeof n !== "number" || !Number.isInteger(n) || n < (allowZero ? 0 : 1) || n > 65535) {
    return fail(`${field}: ${n} is not a port number`);
  }
  return n;
}

function mtls(
  m: PortMtlsMessage | null,
  field: string,
  fail: (r: string) => never,
  allowZero: boolean,
): PortMtls {
  if (!m) return fail(`${field} is required`);
  if (!isMode(m.mode)) {
    return fail(`${field}.mode ${JSON.stringify(m.mode)} is not DISABLE, PERMISSIVE or STRICT`);
  }
  return {
    port: port(m.port, `${field}.port`, fail, allowZero),
    mode: m.mode,
    policy: m.policy,
    scope: m.scope,
  };
}

function isIpOrCidr(text: string): boolean {
  const [ip, bits, more] = text.split("/");
  if (more !== undefined) return false;
  const family = isIP(ip);
  if (family === 0) return false;
  if (bits === undefined) return true;
  const n = Number(bits);
  return /^\d{1,3}$/.test(bits) && n <= (family === 4 ? 32 : 128);
}

function addresses(list: string[], field: string, fail: (r: string) => never, cidr = false): string[] {
  list.forEach((a, i) =>
    (cidr ? isIpOrCidr(a) : isIP(a)) ||
    fail(`${field}[${i}]: ${JSON.stringify(a)} is not an IP address${cidr ? " or CIDR" : ""}`)
  );
  return list;
}

function workload(d: WorkloadMessage, fail: (r: string) => never): WorkloadInfo {
  if (!d.serviceAccount || !d.trustDomain) fail("serviceAccount and trustDomain are required");
  const ports: Record<string, number> = {};
  for (const [k, v] of Object.entries(d.ports)) {
    ports[k] = port(v, `ports.${k}`, fail);
  }
  return {
    name: d.name,
    namespace: d.namespace,
    serviceAccount: d.serviceAccount,
    trustDomain: d.trustDomain,
    addresses: addresses(d.addresses, "addresses", fail),
    labels: d.labels,
    proxied: d.proxied,
    ports,
    inboundMtls: d.inboundMtls.map((m, i) => mtls(m, `inboundMtls[${i}]`, fail, false)),
    defaultMtls: mtls(d.defaultMtls, "defaultMtls", fail, true),
    settings: settings(d.settings, fail),
  };
}

function settings(d: Record<string, unknown> | null, fail: (r: string) => never): ProxySettings {
  try {
    return proxySettingsOf(d ?? {}, "settings");
  } catch (e) {
    return fail(e instanceof Error ? e.message : String(e));
  }
}

function service(d: ServiceMessage, fail: (r: string) => never): ServiceInfo {
  if (d.hosts.length === 0) fail("hosts: at least one host is required");
  const ports = d.ports.map((p, i) => ({
    name: p.name,
    number: port(p.number, `ports[${i}].number`, fail),
    targetPort: port(p.targetPort, `ports[${i}].targetPort`, fail, true),
    protocol: p.protocol,
  }));
  const endpoints = d.endpoints.map((e, i): EndpointInfo => {
    const at = `endpoints[${i}]`;
    if (!e.address) fail(`${at}.address is required`);
    if (d.resolution === "STATIC" && !isIP(e.address)) {
      fail(`${at}.address: ${JSON.stringify(e.address)} is not an IP address (resolution STATIC)`);
    }
    const epPorts: Record<string, number> = {};
    for (const [k, v] of Object.entries(e.ports)) {
      port(Number(k), `${at}.ports key`, fail);
      epPorts[k] = port(v, `${at}.ports.${k}`, fail);
    }
    if (e.proxied && !tryParseSpiffeId(e.identity)) {
      fail(
        `${at}.identity: ${JSON.stringify(e.identity)} is not a SPIFFE ID (needed for a proxied endpoint)`,
      );
    }
    return {
      workload: e.workload,
      address: e.address,
      ports: epPorts,
      proxied: e.proxied,
      identity: e.identity,
      labels: e.labels,
      mtlsDisabledPorts: e.mtlsDisabledPorts.map((p, j) => port(p, `${at}.mtlsDisabledPorts[${j}]`, fail)),
    };
  });
  return {
    name: d.name,
    namespace: d.namespace,
    hosts: d.hosts,
    addresses: addresses(d.addresses, "addresses", fail, true),
    ports,
    endpoints,
    location: d.location,
    resolution: d.resolution,
  };
}

/** Freezes `value` and everything reachable from it; returns it. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
