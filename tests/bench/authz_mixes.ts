/**
 * The policy mixes of the authorization benches (authz_bench.ts, authz_cpu.ts), each with its
 * requests: see authz_bench.ts for what each mix holds.
 *
 * @module
 */
import type { AuthorizationPolicyView, AuthorizationRequest } from "../../shared/mod.ts";

export function worstCase(n: number): AuthorizationPolicyView[] {
  return Array.from({ length: n }, (_, i): AuthorizationPolicyView => {
    const last = i === n - 1;
    return {
      namespace: "foo",
      name: `p${String(i).padStart(4, "0")}`,
      action: last ? "ALLOW" : i % 2 === 0 ? "DENY" : "ALLOW",
      rules: [{
        from: [{
          source: { principals: [last ? "cluster.local/ns/foo/sa/sleep" : `cluster.local/ns/x${i}/sa/a`] },
        }, {
          source: { namespaces: [`ns-${i}`] },
        }],
        to: [{ operation: { methods: ["GET", "POST"], paths: [last ? "/api/{*}/items" : `/v${i}/{**}`] } }],
        when: [{ key: "request.headers[x-tenant]", values: [last ? "t1" : `t-${i}`] }],
      }],
    };
  });
}

function istioMix(n: number): AuthorizationPolicyView[] {
  return Array.from({ length: n }, (_, i): AuthorizationPolicyView => {
    const name = `p${String(i).padStart(4, "0")}`;
    const policy = (action: string, rules: AuthorizationPolicyView["rules"]) => ({
      namespace: "foo",
      name,
      action,
      rules,
    });
    if (i % 50 === 49) {
      return policy("ALLOW", [{ from: [{ source: { trustDomains: [`td${i}.example`] } }] }]);
    }
    switch (i % 5) {
      case 0:
        return policy("ALLOW", [{
          from: [{ source: { principals: [`cluster.local/ns/app${i}/sa/client`] } }],
          to: [{ operation: { methods: ["GET", "HEAD"], paths: [`/api/v${i}/*`] } }],
        }]);
      case 1:
        return policy("DENY", [{
          from: [{ source: { notNamespaces: ["foo", "mesh-system"] } }],
          to: [{ operation: { paths: [`/admin${i}/*`] } }],
        }]);
      case 2:
        return policy("ALLOW", [{
          from: [{ source: { requestPrincipals: [`https://issuer.example/user${i}`] } }],
          to: [{ operation: { paths: [`/users/${i}`, `/users/${i}/*`] } }],
        }]);
      case 3:
        return policy("ALLOW", [{
          to: [{ operation: { hosts: [`svc${i}.foo.svc.cluster.local`], ports: ["8080"] } }],
        }]);
      default:
        return policy("ALLOW", [{
          from: [{ source: { namespaces: [`team${i}`] } }],
          when: [{ key: "request.headers[x-version]", values: [`v${i}`] }],
        }]);
    }
  });
}

function patternMix(n: number): AuthorizationPolicyView[] {
  return Array.from({ length: n }, (_, i): AuthorizationPolicyView => {
    const rules = [
      {
        from: [{ source: { principals: [`cluster.local/ns/app${i}/*`] } }],
        to: [{ operation: { methods: ["GET"] } }],
      },
      {
        from: [{ source: { principals: [`*/sa/robot${i}`] } }],
        to: [{ operation: { paths: ["/admin/*"] } }],
      },
      { from: [{ source: { requestPrincipals: [`https://issuer${i}.example/*`] } }] },
      { to: [{ operation: { hosts: [`*.svc${i}.example`] } }] },
      { from: [{ source: { trustDomains: [`td${i}.*`] } }] },
    ];
    const name = `p${String(i).padStart(4, "0")}`;
    return { namespace: "foo", name, action: i % 5 === 1 ? "DENY" : "ALLOW", rules: [rules[i % 5]] };
  });
}

const BASE: AuthorizationRequest = {
  method: "GET",
  path: "/api/v1/items",
  pathNormalized: true,
  host: "httpbin.foo:8000",
  port: 8000,
  headers: { host: "httpbin.foo:8000", "x-tenant": "t1" },
  sourcePrincipal: "spiffe://cluster.local/ns/foo/sa/sleep",
  sourceIp: "10.0.0.5",
};

/** The worst-case mix's requests: [label, request, allowed]. */
function worstCaseRequests(n: number): [string, AuthorizationRequest, boolean][] {
  const d = 2 * Math.floor((n - 1) / 4);
  return [
    ["allowed", BASE, true],
    ["denied by DENY", {
      ...BASE,
      path: `/v${d}/x`,
      headers: { "x-tenant": `t-${d}` },
      sourcePrincipal: `spiffe://cluster.local/ns/x${d}/sa/a`,
    }, false],
    ["denied, no match", { ...BASE, sourcePrincipal: "spiffe://cluster.local/ns/bar/sa/other" }, false],
  ];
}

/** The Istio mix's requests: the last JWT rule allows, an outsider's admin path is denied. */
function istioRequests(n: number): [string, AuthorizationRequest, boolean][] {
  const jwt = n - 1 - ((n - 1 - 2) % 5 + 5) % 5;
  const admin = Math.max(1, n - 1 - ((n - 1 - 1) % 5 + 5) % 5);
  return [
    ["allowed (JWT)", {
      ...BASE,
      path: `/users/${jwt}/profile`,
      requestPrincipal: `https://issuer.example/user${jwt}`,
    }, true],
    [
      "denied by DENY",
      { ...BASE, path: `/admin${admin}/x`, sourcePrincipal: "spiffe://td/ns/bar/sa/x" },
      false,
    ],
    ["denied, no match", { ...BASE, path: "/nothing" }, false],
  ];
}

/** The pattern mix's requests: the last issuer rule allows, a robot's admin path is denied. */
function patternRequests(n: number): [string, AuthorizationRequest, boolean][] {
  const jwt = n - 1 - ((n - 1 - 2) % 5 + 5) % 5;
  const robot = Math.max(1, n - 1 - ((n - 1 - 1) % 5 + 5) % 5);
  return [
    ["allowed (JWT)", { ...BASE, requestPrincipal: `https://issuer${jwt}.example/anyone` }, true],
    [
      "denied by DENY",
      { ...BASE, path: "/admin/x", sourcePrincipal: `spiffe://cluster.local/ns/bar/sa/robot${robot}` },
      false,
    ],
    ["denied, no match", BASE, false],
  ];
}

/** [name, policies of n, requests of n: [label, request, allowed]]. */
export const MIXES = [
  ["worst case", worstCase, worstCaseRequests],
  ["Istio mix", istioMix, istioRequests],
  ["pattern mix", patternMix, patternRequests],
] as const;
