/**
 * The gateways a VirtualService or one of its matches is bound to, and the host names allowed
 * when it is bound to a gateway. Istio's validateGatewayNames and
 * ValidateWildcardDomainForVirtualServiceBoundToGateway.
 *
 * @module
 */
import { error, type FieldPath, type Finding, warning } from "../../finding.ts";
import { asArray, fqdnProblem, isDns1123Label, wildcardDomainProblem } from "../networking_rules.ts";

/**
 * Istio's validateGatewayNames: `namespace/name`, or the legacy `name` / `name.namespace[.svc…]`
 * form, or `mesh`.
 */
export function checkGatewayNames(names: unknown, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  asArray(names).forEach((n, i) => {
    if (typeof n !== "string") return;
    const p = [...at, i];
    const slash = n.indexOf("/");
    if (slash < 0) {
      if (n.includes(".")) {
        const parts = n.split(".");
        out.push(
          warning(p, `legacy gateway name "${n}"; prefer the namespace/name form: "${parts[1]}/${parts[0]}"`),
        );
      }
      const problem = fqdnProblem(n);
      if (problem) out.push(error(p, problem));
      return;
    }
    const ns = n.slice(0, slash);
    const name = n.slice(slash + 1);
    if (ns === "" || name === "") {
      out.push(error(p, "namespace and name in namespace/name cannot be empty"));
      return;
    }
    if (!isDns1123Label(ns)) out.push(error(p, `invalid namespace "${ns}" in gateway name`));
    if (!isDns1123Label(name)) out.push(error(p, `invalid gateway name "${name}"`));
  });
  return out;
}

/**
 * Istio's ValidateWildcardDomainForVirtualServiceBoundToGateway: at a gateway an SNI host may also
 * be the name Istio generates for AUTO_PASSTHROUGH, `outbound_.<port>_._.<host>`.
 */
export function gatewayHostProblem(host: string, sni: boolean): string | undefined {
  if (sni && host.startsWith("outbound_")) {
    const parts = host.split("_");
    const format = "outbound_.<PORT>_._.<HOSTNAME>";
    if (parts.length < 4) return `domain name "${host}" invalid, should follow the ${format} format`;
    const port = parts[1].replace(/^\.+|\.+$/g, "");
    const name = parts[3].replace(/^\.+|\.+$/g, "");
    if (!/[0-9]/.test(port)) return `domain name "${host}" invalid (label "${port}" invalid); use ${format}`;
    if (!/[a-zA-Z]/.test(name)) {
      return `domain name "${host}" invalid (label "${name}" invalid); use ${format}`;
    }
    return undefined;
  }
  return wildcardDomainProblem(host);
}
