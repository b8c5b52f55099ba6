/**
 * ServiceEntry (networking.mesh.io/v1): adds a service to the mesh's registry, typically an
 * external API or database, or workloads outside Kubernetes. Fields are Istio's networking/v1
 * ServiceEntry (istio.io/latest/docs/reference/config/networking/service-entry); rules are Istio's
 * ValidateServiceEntry plus the CRD's validations.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding, warning } from "../finding.ts";
import { closed, ResourceEnvelope, StringEnum, StringList } from "./common.ts";
import { defineKind } from "./kind_definition.ts";
import {
  asArray,
  asObject,
  asString,
  checkExportTo,
  checkPortName,
  entriesOf,
  fqdnProblem,
  isHttpProtocol,
  isTcpProtocol,
  isTlsProtocol,
  isWildcarded,
  namespaceOf,
  type Obj,
  parseProtocol,
  partialWildcardProblem,
  unsupportedProtocolMessage,
  wildcardDomainProblem,
} from "./networking_rules.ts";
import { isIpOrCidr } from "./ip.ts";
import { checkWorkloadEntry, UNIX_ADDRESS_PREFIX, WorkloadEntrySpec } from "./workload_entry.ts";

/** Where the service lives; MESH_EXTERNAL (the default) disables mTLS to it. */
export const SERVICE_ENTRY_LOCATIONS = ["MESH_EXTERNAL", "MESH_INTERNAL"] as const;

/** How the proxy finds endpoints; NONE (the default) forwards to the original destination address. */
export const SERVICE_ENTRY_RESOLUTIONS = ["NONE", "STATIC", "DNS", "DNS_ROUND_ROBIN", "DYNAMIC_DNS"] as const;

/** Istio's label that routes a service through a waypoint proxy (ambient mode). */
const USE_WAYPOINT_LABEL = "istio.io/use-waypoint";

/** networking.v1.ServicePort: a port of the service. */
export const ServicePort = Type.Object({
  number: Type.Integer({ minimum: 1, maximum: 65535, description: "Port number, 1-65535" }),
  protocol: Type.Optional(Type.String({
    maxLength: 256,
    description:
      "HTTP, HTTPS, HTTP2, GRPC, GRPC-WEB, TCP, TLS, MONGO, REDIS or MYSQL (any case); unset: sniffed",
  })),
  name: Type.String({
    maxLength: 256,
    description: "Port name, a DNS-1123 label, unique in the ServiceEntry",
  }),
  targetPort: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 65535,
    description: "Port on the endpoints that receives the traffic; default: number",
  })),
}, { ...closed, title: "ServicePort", description: "A port of the service" });

/**
 * networking.v1.WorkloadSelector (`labels`, unlike the security kinds' `matchLabels`): selects
 * WorkloadEntries and pods in the resource's namespace.
 */
export const NetworkingWorkloadSelector = Type.Object({
  labels: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 63 }), {
    description: "Labels a workload must carry, all of them, to be selected",
  })),
}, {
  ...closed,
  title: "NetworkingWorkloadSelector",
  description: "Pods and WorkloadEntries of this namespace that are the endpoints; excludes endpoints",
});

const ServiceEntrySpec = Type.Object({
  hosts: Type.Array(Type.String(), {
    maxItems: 256,
    description: "DNS names of the service, optionally with a wildcard prefix (*.example.com); not *",
  }),
  addresses: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), {
    maxItems: 256,
    description: "Virtual IPs or CIDR blocks of the service (CIDRs only with resolution NONE or STATIC)",
  })),
  ports: Type.Optional(Type.Array(ServicePort, { maxItems: 256, description: "Ports of the service" })),
  location: Type.Optional(StringEnum(SERVICE_ENTRY_LOCATIONS, "MESH_EXTERNAL (default) or MESH_INTERNAL")),
  resolution: Type.Optional(StringEnum(SERVICE_ENTRY_RESOLUTIONS, "How endpoints are found; default NONE")),
  endpoints: Type.Optional(Type.Array(WorkloadEntrySpec, {
    maxItems: 4096,
    description: "Endpoints of the service (STATIC: IPs; DNS: names); exclusive with workloadSelector",
  })),
  workloadSelector: Type.Optional(NetworkingWorkloadSelector),
  exportTo: Type.Optional(
    StringList("Namespaces that see the service: . (own), * (all), ~ (none), or names"),
  ),
  subjectAltNames: Type.Optional(StringList("SANs the proxy requires in the server certificate")),
}, {
  ...closed,
  title: "ServiceEntrySpec",
  description: "A service added to the mesh's registry: its hosts, ports and how its endpoints are found",
});

function checkSelector(spec: Obj): Finding[] {
  const sel = asObject(spec.workloadSelector);
  if (!sel) return [];
  const out: Finding[] = [];
  const labels = entriesOf(sel.labels);
  for (const [k, v] of labels) {
    const at = ["spec", "workloadSelector", "labels", k];
    if (k === "") out.push(error(at, "empty label key is not allowed"));
    if (k.includes("*") || String(v).includes("*")) {
      out.push(error(at, `wildcards are not supported in selectors: "${k}=${v}"`));
    }
  }
  if (labels.length === 0) {
    out.push(warning(
      ["spec", "workloadSelector"],
      "workload selector has no labels, so the service selects every workload in the namespace",
    ));
  }
  if (asArray(spec.endpoints).length > 0) {
    out.push(error(["spec", "workloadSelector"], "only one of workloadSelector or endpoints may be set"));
  }
  return out;
}

function checkHosts(spec: Obj, resolution: string): Finding[] {
  if (!Array.isArray(spec.hosts)) return [];
  if (spec.hosts.length === 0) return [error(["spec", "hosts"], "at least one host is required")];
  const out: Finding[] = [];
  spec.hosts.forEach((h, i) => {
    if (typeof h !== "string") return;
    const at = ["spec", "hosts", i];
    if (h === "*") {
      out.push(error(at, 'the host "*" is not allowed in a ServiceEntry; use a domain, or *.domain'));
      return;
    }
    const problem = wildcardDomainProblem(h);
    if (problem) out.push(error(at, problem));
    const partial = partialWildcardProblem(h);
    if (resolution !== "DYNAMIC_DNS" && partial) out.push(warning(at, partial));
  });
  return out;
}

function checkAddresses(spec: Obj, resolution: string): Finding[] {
  const out: Finding[] = [];
  asArray(spec.addresses).forEach((a, i) => {
    if (typeof a !== "string") return;
    if (!isIpOrCidr(a)) {
      out.push(error(["spec", "addresses", i], `"${a}" is not a valid IP address or CIDR block`));
    } else if (a.includes("/") && resolution !== "NONE" && resolution !== "STATIC") {
      out.push(
        error(["spec", "addresses", i], "CIDR addresses are allowed only for NONE/STATIC resolution types"),
      );
    }
  });
  return out;
}

function checkPorts(spec: Obj): { findings: Finding[]; names: Set<string> } {
  const out: Finding[] = [];
  const names = new Set<string>();
  const numbers = new Set<number>();
  const ports = asArray(spec.ports);
  if (ports.length === 0) {
    out.push(warning(["spec"], "no ports: the proxy creates no listener or cluster for this ServiceEntry"));
  }
  ports.forEach((p, i) => {
    const port = asObject(p);
    if (!port) return;
    const at = ["spec", "ports", i];
    const name = asString(port.name);
    if (name !== undefined) {
      if (names.has(name)) out.push(error([...at, "name"], `port name "${name}" is already defined`));
      names.add(name);
      out.push(...checkPortName(name, [...at, "name"]));
    }
    if (typeof port.number === "number") {
      if (numbers.has(port.number)) {
        out.push(error([...at, "number"], `port ${port.number} is already defined`));
      }
      numbers.add(port.number);
    }
    const proto = asString(port.protocol);
    if (proto && !parseProtocol(proto)) {
      out.push(error([...at, "protocol"], unsupportedProtocolMessage(proto)));
    }
  });
  return { findings: out, names };
}

function checkStatic(spec: Obj, servicePorts: Set<string>): Finding[] {
  const out: Finding[] = [];
  const endpoints = asArray(spec.endpoints);
  if (endpoints.length === 0 && !asObject(spec.workloadSelector)) {
    out.push(warning(
      ["spec", "resolution"],
      "resolution STATIC with neither endpoints nor workloadSelector: the service has no endpoints",
    ));
  }
  let unix = false;
  endpoints.forEach((ep, i) => {
    unix ||= (asString(asObject(ep)?.address) ?? "").startsWith(UNIX_ADDRESS_PREFIX);
    out.push(...checkWorkloadEntry(ep, ["spec", "endpoints", i], { address: "static", servicePorts }));
  });
  if (unix && asArray(spec.ports).length !== 1) {
    out.push(error(["spec", "ports"], "exactly 1 service port is required for unix endpoints"));
  }
  return out;
}

function checkDns(spec: Obj, resolution: string, servicePorts: Set<string>): Finding[] {
  const out: Finding[] = [];
  const endpoints = asArray(spec.endpoints);
  const hosts = asArray(spec.hosts);
  if (endpoints.length === 0) {
    // Without endpoints the hosts themselves are resolved, so they must be real names.
    const i = hosts.findIndex((h) => typeof h === "string" && h !== "*" && fqdnProblem(h) !== undefined);
    if (i >= 0) {
      out.push(error(
        ["spec", "hosts", i],
        `hosts must be resolvable names (no wildcards) when resolution is ${resolution} and there are no endpoints`,
      ));
    }
  }
  if (resolution === "DNS_ROUND_ROBIN" && endpoints.length > 1) {
    out.push(error(["spec", "endpoints"], "resolution DNS_ROUND_ROBIN allows at most 1 endpoint"));
  }
  endpoints.forEach((ep, i) => {
    out.push(...checkWorkloadEntry(ep, ["spec", "endpoints", i], { address: "dns", servicePorts }));
  });
  if (asArray(spec.addresses).length > 0 && hosts.length > 1) {
    const tcp = asArray(spec.ports).some((p) => isTcpProtocol(parseProtocol(asObject(p)?.protocol)));
    if (tcp) {
      out.push(warning(
        ["spec", "hosts"],
        "a ServiceEntry with addresses and a TCP port should have only one host: TCP cannot tell hosts apart",
      ));
    }
  }
  return out;
}

function checkDynamicDns(spec: Obj, resource: unknown): Finding[] {
  const out: Finding[] = [];
  asArray(spec.hosts).forEach((h, i) => {
    if (typeof h === "string" && !isWildcarded(h)) {
      out.push(error(["spec", "hosts", i], "hosts must be wildcards (*.domain) for resolution DYNAMIC_DNS"));
    }
  });
  if (asArray(spec.addresses).length > 0) {
    out.push(error(["spec", "addresses"], "addresses cannot be set for resolution DYNAMIC_DNS"));
  }
  if (asArray(spec.endpoints).length > 0) {
    out.push(error(["spec", "endpoints"], "endpoints cannot be set for resolution DYNAMIC_DNS"));
  }
  asArray(spec.ports).forEach((p, i) => {
    const proto = parseProtocol(asObject(p)?.protocol);
    if (proto !== "HTTP" && proto !== "TLS" && proto !== "GRPC" && proto !== "HTTP2") {
      out.push(error(
        ["spec", "ports", i, "protocol"],
        "only HTTP, TLS, GRPC and HTTP2 ports are supported for resolution DYNAMIC_DNS",
      ));
    }
  });
  const waypoint = asString(asObject(asObject(asObject(resource)?.metadata)?.labels)?.[USE_WAYPOINT_LABEL]);
  if (spec.location === "MESH_INTERNAL" && waypoint && waypoint.toLowerCase() !== "none") {
    out.push(
      error(["spec", "location"], "location MESH_INTERNAL with resolution DYNAMIC_DNS cannot use a waypoint"),
    );
  }
  return out;
}

function checkMultipleHosts(spec: Obj, resolution: string): Finding[] {
  // Several hosts share one port; only HTTP (Host header) and TLS (SNI) can tell them apart, unless
  // resolution NONE forwards to the original destination anyway.
  if (resolution === "NONE" || asArray(spec.hosts).length < 2) return [];
  const i = asArray(spec.ports).findIndex((p) => {
    const proto = parseProtocol(asObject(p)?.protocol);
    return asObject(p) !== undefined && !isHttpProtocol(proto) && !isTlsProtocol(proto);
  });
  if (i < 0) return [];
  return [
    error(["spec", "ports", i], "multiple hosts need HTTP or TLS ports (a TCP port cannot tell hosts apart)"),
  ];
}

/**
 * Istio's ValidateServiceEntry on a whole resource.
 *
 * @returns the findings; the resource may be any parsed value
 */
export function serviceEntryRules(resource: unknown): Finding[] {
  const spec = asObject(asObject(resource)?.spec);
  if (!spec) return [];
  const resolution = asString(spec.resolution) ?? "NONE";
  const out: Finding[] = [
    ...checkSelector(spec),
    ...checkHosts(spec, resolution),
    ...checkAddresses(spec, resolution),
  ];
  const ports = checkPorts(spec);
  out.push(...ports.findings);
  switch (resolution) {
    case "NONE":
      if (asArray(spec.endpoints).length > 0) {
        out.push(error(["spec", "endpoints"], "endpoints cannot be set for resolution NONE"));
      }
      if (asObject(spec.workloadSelector)) {
        out.push(
          warning(["spec", "workloadSelector"], "workloadSelector has no effect with resolution NONE"),
        );
      }
      break;
    case "STATIC":
      out.push(...checkStatic(spec, ports.names));
      break;
    case "DNS":
    case "DNS_ROUND_ROBIN":
      out.push(...checkDns(spec, resolution, ports.names));
      break;
    case "DYNAMIC_DNS":
      out.push(...checkDynamicDns(spec, resource));
      break;
  }
  out.push(...checkMultipleHosts(spec, resolution));
  out.push(...checkExportTo(spec.exportTo, namespaceOf(resource), ["spec", "exportTo"] as FieldPath, true));
  return out;
}

/** ServiceEntry: schema and Istio's rules. */
export const serviceEntry = defineKind({
  kind: "ServiceEntry",
  group: "networking",
  plural: "serviceentries",
  schema: ResourceEnvelope(
    "ServiceEntry",
    ServiceEntrySpec,
    "Adds a service to the mesh's registry, e.g. an external API or VMs, so that it can be routed to",
  ),
  rules(se): Finding[] {
    return serviceEntryRules(se);
  },
});
