/**
 * The conditions of an HTTP route (HTTPMatchRequest): uri, scheme, method, authority, headers,
 * query parameters, source and gateway. Istio's validateHTTPRoute match checks.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding } from "../../finding.ts";
import { closed } from "../common.ts";
import {
  asObject,
  asString,
  checkLabels,
  checkStringMatch,
  entriesOf,
  isDns1123Label,
} from "../networking_rules.ts";
import { MatchGateways, MatchPort, SourceLabels, StringMatch, type VsContext } from "./fields.ts";
import { isJwtClaimHeader, matchHeaderNameProblem } from "./headers.ts";
import { checkGatewayNames } from "./gateway_names.ts";

export const HTTPMatchRequest = Type.Object({
  name: Type.Optional(Type.String({ description: "Name, appended to the route's name in logs" })),
  uri: Type.Optional(StringMatch),
  scheme: Type.Optional(StringMatch),
  method: Type.Optional(StringMatch),
  authority: Type.Optional(StringMatch),
  headers: Type.Optional(Type.Record(Type.String(), StringMatch, {
    description: "Lower-case header names; {} matches presence; @request.auth.claims.x matches JWT claims",
  })),
  port: Type.Optional(MatchPort),
  sourceLabels: Type.Optional(SourceLabels),
  gateways: Type.Optional(MatchGateways),
  queryParams: Type.Optional(Type.Record(Type.String(), StringMatch, { description: "Query parameters" })),
  ignoreUriCase: Type.Optional(Type.Boolean({ description: "Match uri case-insensitively" })),
  withoutHeaders: Type.Optional(Type.Record(Type.String(), StringMatch, {
    description: "Headers that must not match; regex * means must be absent",
  })),
  sourceNamespace: Type.Optional(Type.String({ description: "Namespace of the source workload" })),
  statPrefix: Type.Optional(Type.String({ description: "Prefix for the route's statistics" })),
}, { ...closed, title: "HTTPMatchRequest", description: "Conditions, all of which a request must meet" });

export function checkHttpMatch(match: unknown, at: FieldPath, vs: VsContext): Finding[] {
  const m = asObject(match);
  if (!m) return [];
  const out: Finding[] = [];
  for (const field of ["headers", "withoutHeaders"] as const) {
    for (const [name, sm] of entriesOf(m[field])) {
      const p = [...at, field, name];
      const problem = matchHeaderNameProblem(name);
      if (problem) out.push(error(p, problem));
      if (isJwtClaimHeader(name) && !vs.appliesToGateway) {
        out.push(
          error(p, "JWT claim based routing is only supported at gateways; set gateways (without mesh)"),
        );
      }
      out.push(...checkStringMatch(sm, p, { empty: "presence", starIsPresence: field === "withoutHeaders" }));
    }
  }
  out.push(...checkStringMatch(m.uri, [...at, "uri"], { empty: "any", allowEmptyPrefix: true }));
  for (const f of ["scheme", "method", "authority"] as const) {
    out.push(...checkStringMatch(m[f], [...at, f], { empty: "any" }));
  }
  for (const [name, sm] of entriesOf(m.queryParams)) {
    out.push(...checkStringMatch(sm, [...at, "queryParams", name], { empty: "presence" }));
  }
  out.push(...checkLabels(m.sourceLabels, [...at, "sourceLabels"]));
  out.push(...checkGatewayNames(m.gateways, [...at, "gateways"]));
  const ns = asString(m.sourceNamespace);
  if (ns && !isDns1123Label(ns)) out.push(error([...at, "sourceNamespace"], `invalid namespace "${ns}"`));
  return out;
}
