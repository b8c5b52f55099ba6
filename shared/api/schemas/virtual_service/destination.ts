/**
 * VirtualService destinations: the service, subset and port a route, mirror or TCP/TLS rule
 * sends traffic to, and the weights between several. Istio's validateDestination and
 * validateHTTPRouteDestinations / validateRouteDestinations.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding } from "../../finding.ts";
import { closed } from "../common.ts";
import {
  asArray,
  asNumber,
  asObject,
  asString,
  isDns1123Label,
  wildcardDomainProblem,
} from "../networking_rules.ts";
import { Int32 } from "./fields.ts";
import { checkHeaderOperations, Headers } from "./headers.ts";

const PortSelector = Type.Object({
  number: Type.Integer({ minimum: 1, maximum: 65535, description: "Port number, 1-65535" }),
}, { ...closed, title: "PortSelector", description: "A port of the destination service" });

/** networking.v1.Destination: a service (and subset, port) traffic is sent to. */
export const Destination = Type.Object({
  host: Type.String({ description: "Service name from the registry; short names resolve in this namespace" }),
  subset: Type.Optional(Type.String({ description: "Subset defined by a DestinationRule" })),
  port: Type.Optional(PortSelector),
}, {
  ...closed,
  title: "Destination",
  description: "A service, and optionally its subset and port, traffic is sent to",
});

export const HTTPRouteDestination = Type.Object({
  destination: Destination,
  weight: Type.Optional(Int32("Relative share of the traffic; required when there are several destinations")),
  headers: Type.Optional(Headers),
}, { ...closed, title: "HTTPRouteDestination", description: "A weighted destination of an HTTP route" });

export const RouteDestination = Type.Object({
  destination: Destination,
  weight: Type.Optional(Int32("Relative share of the traffic; required when there are several destinations")),
}, { ...closed, title: "RouteDestination", description: "A weighted destination of a TLS or TCP route" });

/** Istio's validateDestination: host a (wildcard) domain but not `*`; subset a DNS label. */
export function checkDestination(dest: unknown, at: FieldPath): Finding[] {
  const d = asObject(dest);
  if (!d) return [];
  const out: Finding[] = [];
  const host = asString(d.host);
  if (host === "*") out.push(error([...at, "host"], 'destination host cannot be "*"'));
  else if (host !== undefined) {
    const problem = wildcardDomainProblem(host);
    if (problem) out.push(error([...at, "host"], problem));
  }
  const subset = asString(d.subset);
  if (subset !== undefined && !isDns1123Label(subset)) {
    out.push(error([...at, "subset"], `invalid subset name "${subset}": must be a DNS-1123 label`));
  }
  return out;
}

/** Istio's validateHTTPRouteDestinations / validateRouteDestinations. */
export function checkRouteDestinations(route: unknown, at: FieldPath, http: boolean): Finding[] {
  const out: Finding[] = [];
  const list = asArray(route);
  let total = 0;
  list.forEach((r, i) => {
    const rd = asObject(r);
    if (!rd) return;
    out.push(...checkDestination(rd.destination, [...at, i, "destination"]));
    if (http) out.push(...checkHeaderOperations(rd.headers, [...at, i, "headers"]));
    const w = asNumber(rd.weight) ?? 0;
    if (w < 0) out.push(error([...at, i, "weight"], `weight ${w} must not be negative`));
    total += w;
  });
  if (list.length > 1 && total === 0) {
    out.push(error(at, "total destination weight is 0: set weights when there are several destinations"));
  }
  return out;
}
