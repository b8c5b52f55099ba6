/**
 * Building blocks shared by the VirtualService's route kinds: string matches, percentages, the
 * integer ranges of Istio's proto fields, the match conditions every route kind has (port, source
 * labels, gateways), and what a rule check needs to know about the VirtualService around it.
 *
 * @module
 */
import { type TInteger, Type } from "@sinclair/typebox";
import { closed, StringList } from "../common.ts";

/** networking.v1.StringMatch: one of exact, prefix, regex (RE2). */
export const StringMatch = Type.Object({
  exact: Type.Optional(Type.String({ description: "The value equals this" })),
  prefix: Type.Optional(Type.String({ description: "The value starts with this" })),
  regex: Type.Optional(Type.String({ description: "The value matches this RE2 regular expression" })),
}, {
  ...closed,
  title: "StringMatch",
  description: "A case-sensitive string condition: one of exact, prefix, regex",
});

export const Percent = Type.Object({
  value: Type.Optional(Type.Number({ description: "Percentage, 0-100, fractions allowed" })),
}, { ...closed, title: "Percent", description: "Share of the requests, as a percentage" });

export const Uint32 = (description: string): TInteger =>
  Type.Integer({ minimum: 0, maximum: 4294967295, description });

export const Int32 = (description: string): TInteger =>
  Type.Integer({ minimum: -2147483648, maximum: 2147483647, description });

export const MatchPort = Type.Integer({
  minimum: 0,
  maximum: 65535,
  description: "Port the traffic is addressed to; 0: any",
});

export const SourceLabels = Type.Record(Type.String(), Type.String(), {
  description: "Labels the source workload must carry",
});

export const MatchGateways = StringList("Gateways (namespace/name, or mesh) this match is restricted to");

export interface VsContext {
  hosts: string[];
  /** No hosts: this VirtualService is a delegate of another's route. */
  isDelegate: boolean;
  /** Bound to a gateway and not to the mesh; JWT claim matches need it. */
  appliesToGateway: boolean;
  /** Some TLS route matches on SNI. */
  sni: boolean;
}
