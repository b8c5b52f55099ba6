/**
 * The VirtualService's TLS rules (routed by SNI) and TCP rules (routed by address and port).
 * Istio's validateTLSRoute, validateTCPRoute and the TLS/L4 match checks.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding, warning } from "../../finding.ts";
import { closed, StringList } from "../common.ts";
import {
  asArray,
  asObject,
  checkLabels,
  hostSubsetOf,
  type Obj,
  wildcardDomainProblem,
} from "../networking_rules.ts";
import { isIp, isIpOrCidr } from "../ip.ts";
import { MatchGateways, MatchPort, SourceLabels, type VsContext } from "./fields.ts";
import { checkRouteDestinations, RouteDestination } from "./destination.ts";
import { checkGatewayNames, gatewayHostProblem } from "./gateway_names.ts";

const TLSMatchAttributes = Type.Object({
  sniHosts: StringList("SNI names; each must be within the VirtualService's hosts"),
  destinationSubnets: Type.Optional(StringList("Destination IPs or CIDR blocks")),
  port: Type.Optional(MatchPort),
  sourceLabels: Type.Optional(SourceLabels),
  gateways: Type.Optional(MatchGateways),
  sourceNamespace: Type.Optional(Type.String({ description: "Namespace of the source workload" })),
}, { ...closed, title: "TLSMatchAttributes", description: "Conditions on a TLS connection" });

const L4MatchAttributes = Type.Object({
  destinationSubnets: Type.Optional(StringList("Destination IPs or CIDR blocks")),
  port: Type.Optional(MatchPort),
  sourceSubnet: Type.Optional(Type.String({ description: "Source IP or CIDR block" })),
  sourceLabels: Type.Optional(SourceLabels),
  gateways: Type.Optional(MatchGateways),
  sourceNamespace: Type.Optional(Type.String({ description: "Namespace of the source workload" })),
}, { ...closed, title: "L4MatchAttributes", description: "Conditions on a TCP connection" });

export const TLSRoute = Type.Object({
  match: Type.Array(TLSMatchAttributes, { description: "Any one must match" }),
  route: Type.Optional(Type.Array(RouteDestination, { description: "Weighted destinations" })),
}, { ...closed, title: "TLSRoute", description: "A rule for TLS or HTTPS traffic, routed by SNI" });

export const TCPRoute = Type.Object({
  match: Type.Optional(Type.Array(L4MatchAttributes, { description: "Any one must match; none: all" })),
  route: Type.Optional(Type.Array(RouteDestination, { description: "Weighted destinations" })),
}, { ...closed, title: "TCPRoute", description: "A rule for opaque TCP traffic" });

function checkSniHost(sni: string, at: FieldPath, vs: VsContext): Finding[] {
  const problem = vs.appliesToGateway ? gatewayHostProblem(sni, true) : wildcardDomainProblem(sni);
  if (problem) {
    if (isIp(sni)) {
      return [
        warning(at, `an IP address ("${sni}") as SNI goes against the SNI spec; most clients do not send it`),
      ];
    }
    return [error(at, problem)];
  }
  if (vs.hosts.some((h) => hostSubsetOf(sni, h))) return [];
  return [
    error(at, `SNI host "${sni}" is not within any of the VirtualService's hosts: [${vs.hosts.join(", ")}]`),
  ];
}

function checkL4Match(m: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  asArray(m.destinationSubnets).forEach((s, i) => {
    if (typeof s === "string" && !isIpOrCidr(s)) {
      out.push(error([...at, "destinationSubnets", i], `"${s}" is not a valid IP address or CIDR block`));
    }
  });
  out.push(...checkLabels(m.sourceLabels, [...at, "sourceLabels"]));
  out.push(...checkGatewayNames(m.gateways, [...at, "gateways"]));
  return out;
}

export function checkTlsRoute(r: Obj, at: FieldPath, vs: VsContext): Finding[] {
  const out: Finding[] = [];
  const matches = asArray(r.match);
  if (Array.isArray(r.match) && matches.length === 0) {
    out.push(error([...at, "match"], "a TLS route needs at least one match"));
  }
  matches.forEach((mm, i) => {
    const m = asObject(mm);
    if (!m) return;
    const mat = [...at, "match", i];
    if (Array.isArray(m.sniHosts) && m.sniHosts.length === 0) {
      out.push(error([...mat, "sniHosts"], "a TLS match needs at least one SNI host"));
    }
    asArray(m.sniHosts).forEach((s, j) => {
      if (typeof s === "string") out.push(...checkSniHost(s, [...mat, "sniHosts", j], vs));
    });
    out.push(...checkL4Match(m, mat));
  });
  if (asArray(r.route).length === 0) out.push(error(at, "a TLS route needs at least one route destination"));
  out.push(...checkRouteDestinations(r.route, [...at, "route"], false));
  return out;
}

export function checkTcpRoute(r: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  asArray(r.match).forEach((m, i) => {
    const mo = asObject(m);
    if (mo) out.push(...checkL4Match(mo, [...at, "match", i]));
  });
  if (asArray(r.route).length === 0) out.push(error(at, "a TCP route needs at least one route destination"));
  out.push(...checkRouteDestinations(r.route, [...at, "route"], false));
  return out;
}
