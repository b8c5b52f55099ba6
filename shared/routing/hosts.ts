/**
 * Host names as gateway routing compares them: a Gateway server's `<namespace>/<host>`, a
 * VirtualService host qualified with its namespace, the intersection of two host patterns, and
 * whether a VirtualService binds to a Gateway (Istio's VirtualService `gateways` and Gateway
 * `servers[].hosts` references).
 *
 * @module
 */
import type { VirtualServiceSpec } from "../api/types.gen.ts";
import type { NamedSpec } from "./route_configuration.ts";
import { domainMatches } from "./route_selection.ts";

/** A server host: `<namespace>/<host>` (`.` is the Gateway's namespace), or `<host>` for any namespace (`*`). */
export function parseServerHost(h: string, gatewayNamespace: string): { namespace: string; host: string } {
  const slash = h.indexOf("/");
  if (slash < 0) return { namespace: "*", host: h.toLowerCase() };
  const ns = h.slice(0, slash);
  return { namespace: ns === "." ? gatewayNamespace : ns, host: h.slice(slash + 1).toLowerCase() };
}

/** A short name (no dot) is a service of the VirtualService's namespace. */
export function qualify(host: string, namespace: string, suffix: string): string {
  return host === "*" || host.includes(".") ? host : `${host}.${namespace}.svc.${suffix}`;
}

/** The more specific of two host patterns when one covers the other, else undefined. */
export function intersect(a: string, b: string): string | undefined {
  if (domainMatches(a, b)) return a;
  if (domainMatches(b, a)) return b;
  return undefined;
}

/** Whether a gateway reference (`<ns>/<name>`, or `<name>` in the VirtualService's namespace) names `gwKey`. */
export function namesGateway(ref: string, vsNamespace: string, gwKey: string): boolean {
  return (ref.includes("/") ? ref : `${vsNamespace}/${ref}`) === gwKey;
}

/** Whether a VirtualService lists the gateway in `spec.gateways`. */
export function bindsTo(vs: NamedSpec<VirtualServiceSpec>, gwKey: string): boolean {
  return (vs.spec.gateways ?? []).some((g) => namesGateway(g, vs.namespace, gwKey));
}
