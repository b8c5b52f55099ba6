/**
 * Per-request cost of the inbound policies, as the proxy pays it (compiled once per config, then
 * evaluated per request): authorization with 1, 10, 100 and 1,000 policies on one workload, indexed
 * (the default) and linear (`compileAuthorization(policies, { index: false })`, every rule in order:
 * what main did before the index), and JWT verification with a cached key. Run with `./dev bench:micro` or
 * `./dev deno bench --allow-all tests/bench/authz_bench.ts`.
 *
 * Two policy mixes:
 * - worst case for the linear scan: each DENY or ALLOW policy has a rule over sources (principals,
 *   namespaces), operations (methods, paths with a template) and a header condition; requests are
 *   `allowed` (only the last ALLOW policy matches, so every rule is evaluated), `denied by DENY`
 *   (a DENY policy in the middle matches) and `denied, no match` (nothing matches: every ALLOW
 *   policy is named in the reason, which the proxy reads in its log line);
 * - an Istio mix (the authorization-policy reference's examples, one per workload caller): ALLOW
 *   per service account and path prefix, DENY of admin paths from outside a namespace
 *   (`notNamespaces`), ALLOW of JWT principals, ALLOW by host and port, ALLOW of a namespace with a
 *   header condition, and one in 50 an ALLOW of another trust domain (which no index keys: evaluated
 *   for every request).
 */
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import {
  type AuthorizationPolicyView,
  type AuthorizationRequest,
  compileAuthorization,
  JwtAuthenticator,
} from "../../shared/mod.ts";

function worstCase(n: number): AuthorizationPolicyView[] {
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

const MIXES = [["worst case", worstCase, worstCaseRequests], ["Istio mix", istioMix, istioRequests]] as const;

for (const [mix, make, requests] of MIXES) {
  for (const n of [1, 10, 100, 1000]) {
    const policies = make(n);
    for (const index of [true, false]) {
      const compiled = compileAuthorization(policies, { index });
      for (const [label, request, allowed] of requests(n)) {
        // One policy has no DENY rule (worst case) and no JWT or DENY policy (Istio mix).
        if (n === 1 && label !== "denied, no match" && (mix === "Istio mix" || label !== "allowed")) continue;
        const d = compiled.evaluate(request);
        if (d.allowed !== allowed) throw new Error(`${mix}, ${n} policies, ${label}: ${d.reason}`);
        const name = `${mix}, ${n} ${n === 1 ? "policy" : "policies"}, ${label}, ${
          index ? "indexed" : "linear"
        }`;
        Deno.bench(name, { group: `${mix} ${n}` }, () => {
          // The proxy reads the reason of every denial (its log line).
          const r = compiled.evaluate(request);
          if (!r.allowed && r.reason.length === 0) throw new Error("no reason");
        });
      }
    }
  }
}

for (const index of [true, false]) {
  Deno.bench(`compile 1,000 policies (once per config push), ${index ? "indexed" : "linear"}`, {
    group: "compile",
  }, () => {
    compileAuthorization(worstCase(1000), { index });
  });
}

const ISS = "testing@secure.istio.io";
for (const alg of ["RS256", "ES256", "EdDSA"]) {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg }] });
  const authenticator = new JwtAuthenticator([{ issuer: ISS, jwks }]);
  const token = await new SignJWT({ iss: ISS, sub: "user-1", exp: Math.floor(Date.now() / 1000) + 86400 })
    .setProtectedHeader({ alg, kid: "k1" })
    .sign(privateKey);
  const source = { headers: { authorization: `Bearer ${token}` }, path: "/headers" };
  if ((await authenticator.authenticate(source)).status !== "valid") throw new Error(`${alg}: not valid`);
  Deno.bench(`verify one JWT (${alg}, key cached)`, { group: "jwt" }, async () => {
    await authenticator.authenticate(source);
  });
}
