/**
 * One HTTP rule of a VirtualService (HTTPRoute): its schema, and Istio's validateHTTPRoute,
 * which runs the checks of its matches, actions, policies and destinations.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { type FieldPath, type Finding, warning } from "../../finding.ts";
import { closed } from "../common.ts";
import { asArray, asObject, asString, isSet, type Obj } from "../networking_rules.ts";
import { checkDuration } from "../duration.ts";
import { Percent, Uint32, type VsContext } from "./fields.ts";
import { checkHeaderOperations, Headers } from "./headers.ts";
import { checkRouteDestinations, Destination, HTTPRouteDestination } from "./destination.ts";
import { checkHttpMatch, HTTPMatchRequest } from "./http_match.ts";
import {
  checkAuthorityRewrite,
  checkDirectResponse,
  checkRedirect,
  checkRewrite,
  checkRouteConflicts,
  Delegate,
  HTTPDirectResponse,
  HTTPRedirect,
  HTTPRewrite,
} from "./http_actions.ts";
import {
  checkCors,
  checkFault,
  checkMirrors,
  checkRetries,
  CorsPolicy,
  HTTPFaultInjection,
  HTTPMirrorPolicy,
  HTTPRetry,
} from "./http_policies.ts";

export const HTTPRoute = Type.Object({
  name: Type.Optional(Type.String({ description: "Name, for logs and statistics" })),
  match: Type.Optional(
    Type.Array(HTTPMatchRequest, { description: "Any one must match; none: all requests" }),
  ),
  route: Type.Optional(Type.Array(HTTPRouteDestination, { description: "Weighted destinations" })),
  redirect: Type.Optional(HTTPRedirect),
  directResponse: Type.Optional(HTTPDirectResponse),
  delegate: Type.Optional(Delegate),
  rewrite: Type.Optional(HTTPRewrite),
  timeout: Type.Optional(Type.String({ description: "Request timeout, e.g. 10s; at least 1ms" })),
  retries: Type.Optional(HTTPRetry),
  fault: Type.Optional(HTTPFaultInjection),
  mirror: Type.Optional(Destination),
  mirrors: Type.Optional(
    Type.Array(HTTPMirrorPolicy, { description: "Destinations requests are copied to" }),
  ),
  mirrorPercent: Type.Optional(Uint32("Deprecated: use mirrorPercentage")),
  mirror_percent: Type.Optional(Uint32("Deprecated: use mirrorPercentage")),
  mirrorPercentage: Type.Optional(Percent),
  corsPolicy: Type.Optional(CorsPolicy),
  headers: Type.Optional(Headers),
}, { ...closed, title: "HTTPRoute", description: "An HTTP routing rule; the first rule that matches wins" });

/** Istio's validateHTTPRoute on one HTTP rule. */
export function checkHttpRoute(r: Obj, at: FieldPath, vs: VsContext): Finding[] {
  const matches = asArray(r.match);
  const out = checkRouteConflicts(r, at, vs);
  matches.forEach((m, i) => out.push(...checkHttpMatch(m, [...at, "match", i], vs)));
  out.push(...checkHeaderOperations(r.headers, [...at, "headers"]));
  const cors = asObject(r.corsPolicy);
  if (cors) out.push(...checkCors(cors, [...at, "corsPolicy"]));
  const fault = asObject(r.fault);
  if (fault) out.push(...checkFault(fault, [...at, "fault"]));
  out.push(...checkMirrors(r, at));
  const redirect = asObject(r.redirect);
  if (redirect) out.push(...checkRedirect(redirect, [...at, "redirect"], matches));
  const dr = asObject(r.directResponse);
  if (dr) out.push(...checkDirectResponse(dr, [...at, "directResponse"]));
  const retries = asObject(r.retries);
  if (retries) out.push(...checkRetries(retries, [...at, "retries"]));
  const rewrite = asObject(r.rewrite);
  if (rewrite) out.push(...checkRewrite(rewrite, [...at, "rewrite"]));
  out.push(...checkAuthorityRewrite(r, at));
  out.push(...checkRouteDestinations(r.route, [...at, "route"], true));
  out.push(...checkDuration(r.timeout, [...at, "timeout"]));
  if (vs.isDelegate === false && isSet(r.delegate) && !asString(asObject(r.delegate)?.name)) {
    out.push(warning([...at, "delegate", "name"], "delegate has no name, so it delegates to nothing"));
  }
  return out;
}
