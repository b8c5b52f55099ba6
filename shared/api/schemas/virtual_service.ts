/**
 * VirtualService (networking.mesh.io/v1): routing rules for the traffic sent to a set of hosts,
 * in the mesh or at a gateway: matches, destinations and weights, redirects, rewrites, retries,
 * timeouts, fault injection, mirroring and CORS. Fields are Istio's networking/v1 VirtualService
 * (istio.io/latest/docs/reference/config/networking/virtual-service); rules are Istio's
 * ValidateVirtualService and the functions it calls (virtualservice.go, validation.go).
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type Finding } from "../finding.ts";
import { closed, ResourceEnvelope, StringList } from "./common.ts";
import { defineKind } from "./kind_definition.ts";
import {
  asArray,
  asObject,
  checkExportTo,
  hostsOverlap,
  namespaceOf,
  type Obj,
  wildcardDomainProblem,
} from "./networking_rules.ts";
import { isIp } from "./ip.ts";
import type { VsContext } from "./virtual_service/fields.ts";
import { checkGatewayNames, gatewayHostProblem } from "./virtual_service/gateway_names.ts";
import { checkHttpRoute, HTTPRoute } from "./virtual_service/http_route.ts";
import { checkTcpRoute, checkTlsRoute, TCPRoute, TLSRoute } from "./virtual_service/l4_routes.ts";
import { checkUnreachable } from "./virtual_service/unreachable.ts";

/** The reserved gateway name that means "the sidecars of the mesh". */
export const MESH_GATEWAY = "mesh";

const VirtualServiceSpec = Type.Object({
  hosts: Type.Optional(StringList("Hosts the rules apply to; none: a delegate VirtualService")),
  gateways: Type.Optional(StringList("Gateways (namespace/name) and/or mesh; default: mesh")),
  http: Type.Optional(Type.Array(HTTPRoute, { description: "HTTP rules, in order" })),
  tls: Type.Optional(Type.Array(TLSRoute, { description: "TLS rules, in order" })),
  tcp: Type.Optional(Type.Array(TCPRoute, { description: "TCP rules, in order" })),
  exportTo: Type.Optional(StringList("Namespaces that see this VirtualService: . (own), * (all), or names")),
}, {
  ...closed,
  title: "VirtualServiceSpec",
  description: "Routing rules for traffic to the hosts, in the sidecars and gateways named",
});

function checkHosts(spec: Obj, vs: VsContext, appliesToMesh: boolean): Finding[] {
  const out: Finding[] = [];
  let allValid = true;
  vs.hosts.forEach((h, i) => {
    const at = ["spec", "hosts", i];
    const problem = vs.appliesToGateway ? gatewayHostProblem(h, vs.sni) : wildcardDomainProblem(h);
    if (problem) {
      if (!isIp(h)) {
        out.push(error(at, problem));
        allValid = false;
      }
    } else if (appliesToMesh && h === "*") {
      out.push(
        error(at, 'the host "*" is not allowed for a VirtualService bound to the mesh; bind it to a gateway'),
      );
      allValid = false;
    }
  });
  if (allValid) {
    for (let i = 0; i < vs.hosts.length; i++) {
      for (let j = i + 1; j < vs.hosts.length; j++) {
        if (hostsOverlap(vs.hosts[i], vs.hosts[j])) {
          out.push(
            error(
              ["spec", "hosts", j],
              `duplicate hosts in virtual service: ${vs.hosts[i]} & ${vs.hosts[j]}`,
            ),
          );
        }
      }
    }
  }
  if (!Array.isArray(spec.hosts) || spec.hosts.length === 0) {
    // Without hosts this is a delegate: it is only reachable through another's route.delegate.
    if (asArray(spec.gateways).length > 0) {
      out.push(error(["spec", "gateways"], "a delegate VirtualService (no hosts) must not have gateways"));
    }
    if (asArray(spec.tls).length > 0) {
      out.push(error(["spec", "tls"], "a delegate VirtualService (no hosts) cannot have tls routes"));
    }
    if (asArray(spec.tcp).length > 0) {
      out.push(error(["spec", "tcp"], "a delegate VirtualService (no hosts) cannot have tcp routes"));
    }
  }
  return out;
}

/**
 * Istio's ValidateVirtualService on a whole resource.
 *
 * @returns the findings; the resource may be any parsed value
 */
export function virtualServiceRules(resource: unknown): Finding[] {
  const spec = asObject(asObject(resource)?.spec);
  if (!spec) return [];
  const gateways = asArray(spec.gateways).filter((g): g is string => typeof g === "string");
  const appliesToGateway = gateways.length > 0 && !gateways.includes(MESH_GATEWAY);
  const vs: VsContext = {
    hosts: asArray(spec.hosts).filter((h): h is string => typeof h === "string"),
    isDelegate: asArray(spec.hosts).length === 0,
    appliesToGateway,
    sni: asArray(spec.tls).some((t) =>
      asArray(asObject(t)?.match).some((m) => asArray(asObject(m)?.sniHosts).length > 0)
    ),
  };
  const out = checkHosts(spec, vs, !appliesToGateway);
  out.push(...checkGatewayNames(spec.gateways, ["spec", "gateways"]));
  const http = asArray(spec.http);
  const tls = asArray(spec.tls);
  const tcp = asArray(spec.tcp);
  if (http.length === 0 && tls.length === 0 && tcp.length === 0) {
    out.push(error(["spec"], "a VirtualService needs at least one of http, tls, tcp"));
  }
  http.forEach((r, i) => {
    const ro = asObject(r);
    if (ro) out.push(...checkHttpRoute(ro, ["spec", "http", i], vs));
  });
  tls.forEach((r, i) => {
    const ro = asObject(r);
    if (ro) out.push(...checkTlsRoute(ro, ["spec", "tls", i], vs));
  });
  tcp.forEach((r, i) => {
    const ro = asObject(r);
    if (ro) out.push(...checkTcpRoute(ro, ["spec", "tcp", i]));
  });
  out.push(...checkExportTo(spec.exportTo, namespaceOf(resource), ["spec", "exportTo"], false));
  out.push(
    ...checkUnreachable(spec.http, "http"),
    ...checkUnreachable(spec.tls, "tls"),
    ...checkUnreachable(spec.tcp, "tcp"),
  );
  return out;
}

/** VirtualService: schema and Istio's rules. */
export const virtualService = defineKind({
  kind: "VirtualService",
  group: "networking",
  plural: "virtualservices",
  schema: ResourceEnvelope(
    "VirtualService",
    VirtualServiceSpec,
    "Routing rules applied to traffic addressed to a host: matching, splitting, rewrites, retries, faults",
  ),
  rules(vs): Finding[] {
    return virtualServiceRules(vs);
  },
});
