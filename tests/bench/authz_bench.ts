/**
 * Per-request cost of the inbound policies, as the proxy pays it (compiled once per config, then
 * evaluated per request): authorization with 1, 10, 100 and 1,000 policies on one workload, indexed
 * (the default) and linear (`compileAuthorization(policies, { index: false })`, every rule in order:
 * what main did before the index), and JWT verification with a cached key. Run with `./dev bench:micro` or
 * `./dev deno bench --allow-all tests/bench/authz_bench.ts`.
 *
 * Three policy mixes:
 * - worst case for the linear scan: each DENY or ALLOW policy has a rule over sources (principals,
 *   namespaces), operations (methods, paths with a template) and a header condition; requests are
 *   `allowed` (only the last ALLOW policy matches, so every rule is evaluated), `denied by DENY`
 *   (a DENY policy in the middle matches) and `denied, no match` (nothing matches: every ALLOW
 *   policy is named in the reason, which the proxy reads in its log line);
 * - an Istio mix (the authorization-policy reference's examples, one per workload caller): ALLOW
 *   per service account and path prefix, DENY of admin paths from outside a namespace
 *   (`notNamespaces`), ALLOW of JWT principals, ALLOW by host and port, ALLOW of a namespace with a
 *   header condition, and one in 50 an ALLOW of another trust domain;
 * - a pattern mix, Istio's wildcard forms: ALLOW of a principal prefix (`cluster.local/ns/app1/*`),
 *   DENY of a principal suffix (a `sa/robot1` of any namespace) on admin paths, ALLOW of any
 *   subject of one JWT issuer (`https://issuer2.example/*`), of a host suffix (`*.svc3.example`)
 *   and of a trust-domain pattern (`td4.*`).
 * Every rule of the three mixes has index keys (rule_keys.ts).
 */
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { compileAuthorization, JwtAuthenticator } from "../../shared/mod.ts";
import { MIXES, worstCase } from "./authz_mixes.ts";

for (const [mix, make, requests] of MIXES) {
  for (const n of [1, 10, 100, 1000]) {
    const policies = make(n);
    for (const index of [true, false]) {
      const compiled = compileAuthorization(policies, { index });
      for (const [label, request, allowed] of requests(n)) {
        // One policy has no DENY rule (worst case) and no JWT or DENY policy (the other mixes).
        if (n === 1 && label !== "denied, no match" && (mix !== "worst case" || label !== "allowed")) {
          continue;
        }
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
