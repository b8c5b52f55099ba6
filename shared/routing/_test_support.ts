/**
 * Gateway routing test fixtures: the ingress gateway workload and builders of the Gateways and
 * VirtualServices the tests read from YAML flow text. Test-only: excluded from the JSR package.
 *
 * @module
 */
import { parse } from "yaml";
import type { GatewaySpec, VirtualServiceSpec } from "../api/types.gen.ts";
import type { NamedSpec } from "./route_configuration.ts";

/** The ingress gateway workload. */
export const INGRESS = { namespace: "mesh-system", labels: { istio: "ingressgateway", app: "gw" } };

/** A Gateway from its spec in YAML. */
export function gw(namespace: string, name: string, spec: string): NamedSpec<GatewaySpec> {
  return { namespace, name, spec: parse(spec) };
}
/** A VirtualService from its spec in YAML. */
export function vs(namespace: string, name: string, spec: string): NamedSpec<VirtualServiceSpec> {
  return { namespace, name, spec: parse(spec) };
}
