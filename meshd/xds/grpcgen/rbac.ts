/**
 * AuthorizationPolicy as gRPC's RBAC HTTP filter (envoy.extensions.filters.http.rbac.v3.RBAC, gRFC
 * A41), for proxyless gRPC servers: a DENY filter then an ALLOW filter, as istiod's grpcgen builds
 * them (gRPC has no CUSTOM or AUDIT action).
 *
 * Translated: source principals, notPrincipals, namespaces, notNamespaces, ipBlocks, notIpBlocks
 * (peer address; gRPC sees no X-Forwarded-For, so remoteIpBlocks are taken as the peer too);
 * operation methods, notMethods, paths, notPaths (exact, `prefix*`, `*suffix`), ports, notPorts;
 * conditions source.principal, source.namespace, source.ip, destination.port, request.headers[...].
 * Not translated (gRPC has no JWT filter, and hosts are the authority): requestPrincipals, hosts,
 * request.auth.* and other keys. A rule that uses one of them is dropped from an ALLOW policy (it
 * allows less) and loses that field in a DENY policy (it denies more): both fail closed.
 *
 * @module
 */
import type { AuthorizationPolicySpec } from "../../../shared/mod.ts";
import type { SelectingPolicyView } from "../../push_context/push_context.ts";
import { ENVOY_TYPES, envoyAny } from "../../../shared/internal/xds/envoy_types.ts";

type Msg = Record<string, unknown>;
type Rule = NonNullable<AuthorizationPolicySpec["rules"]>[number];

/** A string match from Istio's `exact`, `prefix*`, `*suffix` or `*` form; undefined for `*`. */
function stringMatch(value: string): Msg | undefined {
  if (value === "*") return undefined;
  if (value.endsWith("*")) return { prefix: value.slice(0, -1) };
  if (value.startsWith("*")) return { suffix: value.slice(1) };
  return { exact: value };
}

const ANY: Msg = { any: true };

function principalOfId(id: string): Msg {
  const m = stringMatch(id);
  if (!m) return { authenticated: {} };
  // Istio's principals omit the scheme; certificates carry spiffe:// URIs.
  if ("exact" in m) return { authenticated: { principalName: { exact: `spiffe://${id}` } } };
  if ("prefix" in m) return { authenticated: { principalName: { prefix: `spiffe://${m.prefix}` } } };
  return { authenticated: { principalName: m } };
}

function principalOfNamespace(ns: string): Msg {
  const escaped = ns.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\\\*/g, ".*");
  return { authenticated: { principalName: { safeRegex: { regex: `spiffe://[^/]+/ns/${escaped}/.*` } } } };
}

function cidr(block: string): Msg {
  const [address, len] = block.split("/");
  return {
    addressPrefix: address,
    prefixLen: { value: len ? Number(len) : address.includes(":") ? 128 : 32 },
  };
}

function orIds(ids: Msg[]): Msg {
  return ids.length === 1 ? ids[0] : { orIds: { ids } };
}
function orRules(rules: Msg[]): Msg {
  return rules.length === 1 ? rules[0] : { orRules: { rules } };
}

/** One principal clause per source field given (ANDed); `undefined` when the rule must be dropped. */
function sourcePrincipals(rule: Rule, deny: boolean): Msg[] | undefined {
  const clauses: Msg[] = [];
  const sources = rule.from ?? [];
  const perSource: Msg[] = [];
  for (const { source = {} } of sources) {
    const and: Msg[] = [];
    const add = (values: string[] | undefined, f: (v: string) => Msg, not = false) => {
      if (!values?.length) return;
      const m = orIds(values.map(f));
      and.push(not ? { notId: m } : m);
    };
    add(source.principals, principalOfId);
    add(source.notPrincipals, principalOfId, true);
    add(source.namespaces, principalOfNamespace);
    add(source.notNamespaces, principalOfNamespace, true);
    add(source.ipBlocks, (b) => ({ directRemoteIp: cidr(b) }));
    add(source.notIpBlocks, (b) => ({ directRemoteIp: cidr(b) }), true);
    add(source.remoteIpBlocks, (b) => ({ directRemoteIp: cidr(b) }));
    add(source.notRemoteIpBlocks, (b) => ({ directRemoteIp: cidr(b) }), true);
    if (source.requestPrincipals?.length || source.notRequestPrincipals?.length) {
      if (!deny) return undefined;
    }
    perSource.push(and.length === 0 ? ANY : and.length === 1 ? and[0] : { andIds: { ids: and } });
  }
  if (perSource.length > 0) clauses.push(orIds(perSource));
  for (const c of rule.when ?? []) {
    const values = c.values ?? [];
    const notValues = c.notValues ?? [];
    const one = (v: string): Msg | undefined => {
      if (c.key === "source.principal") return principalOfId(v);
      if (c.key === "source.namespace") return principalOfNamespace(v);
      if (c.key === "source.ip") return { directRemoteIp: cidr(v) };
      const header = /^request\.headers\[(.+)\]$/.exec(c.key);
      if (header) {
        const m = stringMatch(v);
        return { header: { name: header[1], ...(m ? { stringMatch: m } : { presentMatch: true }) } };
      }
      return undefined;
    };
    if (c.key === "destination.port") continue; // a permission, see operationPermissions
    const ids = values.map(one);
    const notIds = notValues.map(one);
    if ([...ids, ...notIds].some((m) => m === undefined)) {
      if (deny) continue;
      return undefined;
    }
    if (ids.length > 0) clauses.push(orIds(ids as Msg[]));
    if (notIds.length > 0) clauses.push({ notId: orIds(notIds as Msg[]) });
  }
  return clauses;
}

function pathRule(p: string): Msg {
  const m = stringMatch(p);
  return m ? { urlPath: { path: m } } : ANY;
}

/** The permission clauses of a rule (ANDed); `undefined` when the rule must be dropped. */
function operationPermissions(rule: Rule, deny: boolean): Msg[] | undefined {
  const clauses: Msg[] = [];
  const perOp: Msg[] = [];
  for (const { operation = {} } of rule.to ?? []) {
    const and: Msg[] = [];
    const add = (values: string[] | undefined, f: (v: string) => Msg, not = false) => {
      if (!values?.length) return;
      const m = orRules(values.map(f));
      and.push(not ? { notRule: m } : m);
    };
    const method = (m: string): Msg => ({ header: { name: ":method", stringMatch: { exact: m } } });
    add(operation.methods, method);
    add(operation.notMethods, method, true);
    add(operation.paths, pathRule);
    add(operation.notPaths, pathRule, true);
    add(operation.ports, (p) => ({ destinationPort: Number(p) }));
    add(operation.notPorts, (p) => ({ destinationPort: Number(p) }), true);
    if ((operation.hosts?.length || operation.notHosts?.length) && !deny) return undefined;
    perOp.push(and.length === 0 ? ANY : and.length === 1 ? and[0] : { andRules: { rules: and } });
  }
  if (perOp.length > 0) clauses.push(orRules(perOp));
  for (const c of rule.when ?? []) {
    if (c.key !== "destination.port") continue;
    if (c.values?.length) clauses.push(orRules(c.values.map((p) => ({ destinationPort: Number(p) }))));
    if (c.notValues?.length) {
      clauses.push({ notRule: orRules(c.notValues.map((p) => ({ destinationPort: Number(p) }))) });
    }
  }
  return clauses;
}

/** The RBAC policies of the given AuthorizationPolicies, by `<namespace>.<name>[<rule index>]`. */
export function rbacPolicies(
  policies: readonly SelectingPolicyView<AuthorizationPolicySpec>[],
  deny: boolean,
): Record<string, Msg> {
  const out: Record<string, Msg> = {};
  for (const p of policies) {
    (p.spec.rules ?? []).forEach((rule, i) => {
      const principals = sourcePrincipals(rule, deny);
      const permissions = operationPermissions(rule, deny);
      if (!principals || !permissions) return;
      out[`${p.namespace}.${p.name}[${i}]`] = {
        permissions: [permissions.length === 0 ? ANY : { andRules: { rules: permissions } }],
        principals: [principals.length === 0 ? ANY : { andIds: { ids: principals } }],
      };
    });
  }
  return out;
}

/**
 * The RBAC HTTP filters for a workload's selected policies: DENY first (when any DENY policy
 * applies), then ALLOW (when any ALLOW policy applies: a request no ALLOW rule matches is denied, even
 * when every rule was dropped). Policies of other actions are not sent (see the module docs).
 */
export function rbacFilters(policies: readonly SelectingPolicyView<AuthorizationPolicySpec>[]): Msg[] {
  const filters: Msg[] = [];
  for (const action of ["DENY", "ALLOW"] as const) {
    const selected = policies.filter((p) => (p.spec.action ?? "ALLOW") === action);
    if (selected.length === 0) continue;
    filters.push({
      name: `envoy.filters.http.rbac.${action.toLowerCase()}`,
      typedConfig: envoyAny(ENVOY_TYPES.rbac, {
        rules: { action, policies: rbacPolicies(selected, action === "DENY") },
      }),
    });
  }
  return filters;
}
