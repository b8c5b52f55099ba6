/**
 * Per-request cost of the inbound policies, as the proxy pays it (compiled once per config, then
 * evaluated per request): authorization with 1, 100 and 1,000 policies on one workload, and JWT
 * verification with a cached key. Run with `./dev bench` or
 * `./dev deno bench --allow-all tests/bench/authz_bench.ts`.
 *
 * The policies are a realistic mix: each DENY or ALLOW policy has a rule over sources (principals,
 * namespaces), operations (methods, paths with a template) and a header condition; the request
 * matches none of the DENY rules and only the last ALLOW policy, so every rule is evaluated (the
 * worst case for the linear scan).
 */
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import {
  type AuthorizationPolicyView,
  type AuthorizationRequest,
  compileAuthorization,
  JwtAuthenticator,
} from "../../shared/mod.ts";

function policies(n: number): AuthorizationPolicyView[] {
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

const request: AuthorizationRequest = {
  method: "GET",
  path: "/api/v1/items",
  pathNormalized: true,
  host: "httpbin.foo:8000",
  port: 8000,
  headers: { host: "httpbin.foo:8000", "x-tenant": "t1" },
  sourcePrincipal: "spiffe://cluster.local/ns/foo/sa/sleep",
  sourceIp: "10.0.0.5",
};

for (const n of [1, 100, 1000]) {
  const compiled = compileAuthorization(policies(n));
  if (!compiled.evaluate(request).allowed) throw new Error(`${n} policies: the request should be allowed`);
  Deno.bench(`authorize one request, ${n} ${n === 1 ? "policy" : "policies"}`, { group: "authz" }, () => {
    compiled.evaluate(request);
  });
}

Deno.bench("compile 1,000 policies (once per config push)", { group: "compile" }, () => {
  compileAuthorization(policies(1000));
});

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
