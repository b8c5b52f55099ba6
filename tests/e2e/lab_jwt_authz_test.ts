/**
 * End-user JWT authentication and authorization end to end through the local mesh lab
 * (deploy/lab), with real httpbin (gunicorn) and real curl run inside the workloads' namespaces:
 *
 * - the policies seed's JWT/authorization rows ("Observable effects", "Errors"), on httpbin.foo's
 *   sidecar, from sleep.foo (itself proxied);
 * - Istio's "Authentication Policy" task, end-user part, through the lab's ingress gateway
 *   (`istio-ingressgateway` in istio-system, `proxy --type router`), reached from an unproxied client
 *   through the gateway's service VIP; plus the seed's rule that a policy on the gateway applies to
 *   every service bound to it (a second VirtualService, host foo.example.com → httpbin.foo);
 * - Istio's "JWT Token authorization" and "Explicit Deny" tasks, with their YAML from
 *   tests/fixtures/istio;
 * - a token that expires 5 s after it is signed (first thing in the file): 200 at about exp+50 s, 401
 *   after exp+61 s (seed: 60 s clock skew). Its two late probes run on timers while the other rows run.
 *
 * meshd fetches every jwksUri itself from inside its own namespace: the key set is served by an
 * unproxied `python3 -m http.server` workload (`jwks.legacy`), holding Istio's sample key
 * (tests/fixtures/istio_jwt) and a key made here for the expiring token; the tests' copies of Istio's
 * YAML point jwksUri there instead of raw.githubusercontent.com. `x-mesh-authz-debug: 1` makes every
 * 403 name the policy and rule that denied it: the topology's meshConfig lists the lab's subnet and
 * sleep.foo's principal in `denialExplanation` (nobody may read it by default).
 *
 * The gateway's Gateway and VirtualService (Istio's samples/httpbin/httpbin-gateway.yaml) are applied
 * in namespace bar, not foo as in the task, so that the gateway's backend (httpbin.bar) is untouched by
 * the policies the other rows put on httpbin.foo while the expiring token's timers run.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { labDown, labUnavailable, labUp } from "../../deploy/lab/mod.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { figure } from "../../shared/internal/testing/figures.ts";
import {
  apply,
  DEMO_JWT,
  type Env,
  expectRows,
  fixture,
  GATEWAY_URL,
  GROUPS_JWT,
  inNamespace,
  INVALID_JWT,
  ISS,
  remove,
  type Reply,
  request,
  SEED_RA,
  seedDeny,
  SUBNET,
  toFoo,
  topology,
  viaGateway,
  VS_FOO,
  withLabJwks,
} from "./lab_jwt_authz_support.ts";

const unavailable = labUnavailable() ?? httpbinMissing();

const timings: string[] = [];
const note = (row: string, ms: number) => timings.push(`${row}: ${ms} ms`);

/** Timers of the late probes, cleared when the test ends early. */
const timers: ReturnType<typeof setTimeout>[] = [];

/** Runs `probe` at `atMs` (epoch ms), or at once when that has passed; resolves with when it ran. */
function at<T>(atMs: number, probe: () => Promise<T>): Promise<{ ranAt: number; result: T }> {
  return new Promise((resolve, reject) => {
    timers.push(setTimeout(() => {
      const ranAt = Date.now();
      probe().then((result) => resolve({ ranAt, result }), reject);
    }, Math.max(0, atMs - Date.now())));
  });
}

Deno.test(requires(unavailable, {
  name:
    "e2e: JWT and authorization through the lab (seed rows, Istio's authn/JWT/deny tasks, gateway, expiry)",
  async fn(t) {
    // The expiring token's clock starts first, so that its 66 s overlap the lab's start and the rows.
    const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
    const exp = Math.floor(Date.now() / 1000) + 5;
    const expiring = await new SignJWT({ iss: ISS, sub: "expiring-user", exp })
      .setProtectedHeader({ alg: "ES256", kid: "lab-expiring" })
      .sign(privateKey);
    const dir = await Deno.makeTempDir({ prefix: "lab-jwt-e2e-" });
    const jwksDir = join(dir, "jwks");
    await Deno.mkdir(jwksDir);
    const istioKeys = JSON.parse(fixture("../istio_jwt/jwks.json")).keys as object[];
    const ownKey = { ...(await exportJWK(publicKey)), kid: "lab-expiring", alg: "ES256", use: "sig" };
    await Deno.writeTextFile(join(jwksDir, "jwks.json"), JSON.stringify({ keys: [...istioKeys, ownKey] }));
    await Deno.writeTextFile(join(dir, "topology.yaml"), topology(jwksDir));
    const lab = `lj${Deno.pid}`;
    const started = Date.now();
    let late: Promise<{ ranAt: number; result: Reply }[]> | undefined;
    try {
      const state = await labUp(join(dir, "topology.yaml"), { name: lab, subnet: SUBNET });
      const env: Env = { lab, dir, state, applied: new Set() };
      note("lab up (meshd, 6 workloads, 3 sidecars, 1 gateway ready)", Date.now() - started);

      await t.step("Istio 'Authentication Policy', end-user part, through the ingress gateway", async () => {
        await apply(
          env,
          "httpbin-gateway.yaml",
          inNamespace(fixture("authn-policy/06_httpbin_gateway_foo.yaml"), "bar"),
        );
        note("gateway routes", await expectRows(env, [viaGateway("/headers", "200")]));
        const through = await request(env, "legacy/sleep", `${GATEWAY_URL}/headers`);
        assert.match(
          JSON.parse(through.body).headers["X-Forwarded-Client-Cert"] ?? "",
          /By=spiffe:\/\/cluster\.local\/ns\/bar\/sa\/httpbin;.*URI=spiffe:\/\/cluster\.local\/ns\/istio-system\/sa\/istio-ingressgateway-service-account/,
          "the gateway reaches httpbin.bar over automatic mutual TLS",
        );

        await apply(
          env,
          "jwt-example.yaml",
          withLabJwks(fixture("authn-policy/07_request_authentication_jwt_example_ingressgateway.yaml")),
        );
        note(
          "07 RequestAuthentication at the gateway (meshd fetches the lab's jwksUri)",
          await expectRows(env, [
            viaGateway("/headers", "401", { token: "deadbeef" }),
            viaGateway("/headers", "200", { token: DEMO_JWT }),
            viaGateway("/headers", "200"),
          ]),
        );
        // Past its exp (lab up usually takes longer than 5 s), and accepted within the 60 s skew.
        await new Promise((r) => setTimeout(r, Math.max(0, exp * 1000 + 1000 - Date.now())));
        await expectRows(env, [viaGateway("/headers", "200", { token: expiring })], 0);
        timings.push(`expiring token accepted at exp+${(Date.now() / 1000 - exp).toFixed(1)} s`);

        await apply(
          env,
          "frontend-ingress.yaml",
          fixture("authn-policy/08_authorization_policy_frontend_ingress_require_token.yaml"),
        );
        const denyAll = "denied by DENY policy istio-system/frontend-ingress rule 0";
        note(
          "08 require a token at the gateway",
          await expectRows(env, [
            viaGateway("/headers", "403", {}, denyAll),
            viaGateway("/ip", "403", {}, denyAll),
            viaGateway("/headers", "200", { token: DEMO_JWT }),
          ]),
        );
        await apply(
          env,
          "frontend-ingress.yaml",
          fixture("authn-policy/09_authorization_policy_frontend_ingress_require_token_per_path.yaml"),
        );
        note(
          "09 require a token on /headers only",
          await expectRows(env, [
            viaGateway("/headers", "403", {}, denyAll),
            viaGateway("/ip", "200"),
            viaGateway("/headers", "200", { token: DEMO_JWT }),
            viaGateway("/headers", "200", { token: expiring }),
          ]),
        );
        // Seed: a policy on the gateway applies to every service bound to it; here a second one.
        await apply(env, "vs-foo.yaml", VS_FOO);
        const fooHost = { headers: { Host: "foo.example.com" } };
        note(
          "the gateway's policies apply to a second bound service (httpbin.foo)",
          await expectRows(env, [
            {
              ...viaGateway("/headers", "200", { ...fooHost, token: DEMO_JWT }),
              body: /By=spiffe:\/\/cluster\.local\/ns\/foo\/sa\/httpbin;/,
            },
            viaGateway("/headers", "403", fooHost, denyAll),
            viaGateway("/headers", "401", { ...fooHost, token: INVALID_JWT }),
            viaGateway("/ip", "200", fooHost),
          ]),
        );
        await remove(env, "vs-foo.yaml");
        // 07 and 09 stay: the expiring token's late probes go through them while the other rows run.
        const probe = () => request(env, "legacy/sleep", `${GATEWAY_URL}/headers`, { token: expiring });
        late = Promise.all([at(exp * 1000 + 50_000, probe), at(exp * 1000 + 61_500, probe)]);
      });

      await t.step(
        "policies seed: RequestAuthentication and DENY notRequestPrincipals rows (httpbin.foo)",
        async () => {
          await expectRows(env, [toFoo("/headers", "200", { token: INVALID_JWT }), toFoo("/headers", "200")]);
          await apply(env, "seed-ra.yaml", SEED_RA);
          note(
            "RequestAuthentication: valid 200, invalid 401, none 200",
            await expectRows(env, [
              toFoo("/headers", "401", { token: INVALID_JWT }),
              toFoo("/headers", "200", { token: DEMO_JWT }),
              toFoo("/headers", "200"),
            ]),
          );
          const reason = "denied by DENY policy foo/require-token rule 0";
          await apply(env, "seed-deny.yaml", seedDeny(""));
          note(
            "DENY notRequestPrincipals [*]: tokenless 403 on every path",
            await expectRows(env, [
              toFoo("/headers", "403", {}, reason),
              toFoo("/ip", "403", {}, reason),
              toFoo("/headers", "200", { token: DEMO_JWT }),
              toFoo("/ip", "401", { token: INVALID_JWT }),
            ]),
          );
          await apply(env, "seed-deny.yaml", seedDeny(`, to: [{operation: {paths: ["/headers"]}}]`));
          note(
            "same plus to.operation.paths [/headers]: only /headers 403",
            await expectRows(env, [
              toFoo("/headers", "403", {}, reason),
              toFoo("/ip", "200"),
              toFoo("/headers", "200", { token: DEMO_JWT }),
            ]),
          );
          await remove(env, "seed-deny.yaml", "seed-ra.yaml");
          await expectRows(env, [toFoo("/headers", "200", { token: INVALID_JWT })]);
        },
      );

      await t.step("Istio 'JWT Token authorization': requestPrincipals, then the groups claim", async () => {
        await apply(
          env,
          "jwt-example-foo.yaml",
          withLabJwks(fixture("authz-jwt/01_request_authentication_jwt_example_httpbin_foo.yaml")),
        );
        note(
          "01 RequestAuthentication: invalid 401, none 200",
          await expectRows(env, [
            toFoo("/headers", "401", { token: "invalidToken" }),
            toFoo("/headers", "200"),
          ]),
        );
        await apply(env, "require-jwt.yaml", fixture("authz-jwt/02_authorization_policy_require_jwt.yaml"));
        const noRule = "denied: no rule of ALLOW policies foo/require-jwt matched";
        note(
          "02 ALLOW requestPrincipals: demo.jwt 200, none 403",
          await expectRows(env, [
            toFoo("/headers", "200", { token: DEMO_JWT }),
            toFoo("/headers", "403", {}, noRule),
          ]),
        );
        await apply(
          env,
          "require-jwt.yaml",
          fixture("authz-jwt/03_authorization_policy_require_jwt_groups_claim.yaml"),
        );
        note(
          "03 claims groups contains group1: groups-scope.jwt 200, demo.jwt 403",
          await expectRows(env, [
            toFoo("/headers", "200", { token: GROUPS_JWT }),
            toFoo("/headers", "403", { token: DEMO_JWT }, noRule),
          ]),
        );
        await remove(env, "require-jwt.yaml", "jwt-example-foo.yaml");
        await expectRows(env, [toFoo("/headers", "200")]);
      });

      await t.step("Istio 'Explicit Deny': deny GET, unless x-token admin; plus allow-path-ip", async () => {
        await apply(
          env,
          "deny-method-get.yaml",
          fixture("authz-deny/01_authorization_policy_deny_method_get.yaml"),
        );
        const denyGet = "denied by DENY policy foo/deny-method-get rule 0";
        note(
          "01 deny GET: GET 403, POST 200",
          await expectRows(env, [
            toFoo("/get", "403", {}, denyGet),
            toFoo("/post", "200", { method: "POST" }),
          ]),
        );
        await apply(
          env,
          "deny-method-get.yaml",
          fixture("authz-deny/02_authorization_policy_deny_method_get_unless_x_token_admin.yaml"),
        );
        const admin = { headers: { "x-token": "admin" } };
        const guest = { headers: { "x-token": "guest" } };
        note(
          "02 unless x-token admin: admin 200, guest 403",
          await expectRows(env, [toFoo("/get", "200", admin), toFoo("/get", "403", guest, denyGet)]),
        );
        await apply(
          env,
          "allow-path-ip.yaml",
          fixture("authz-deny/03_authorization_policy_allow_path_ip.yaml"),
        );
        note(
          "03 allow /ip: /ip guest 403 (DENY first), /ip admin 200, /get admin 403",
          await expectRows(env, [
            toFoo("/ip", "403", guest, denyGet),
            toFoo("/ip", "200", admin),
            toFoo("/get", "403", admin, "denied: no rule of ALLOW policies foo/allow-path-ip matched"),
          ]),
        );
        await remove(env, "allow-path-ip.yaml", "deny-method-get.yaml");
        await expectRows(env, [toFoo("/get", "200")]);
      });

      await t.step(
        "a token that expired 5 s after signing: 200 at exp+50 s, 401 after exp+61 s",
        async () => {
          assert.ok(late, "the gateway step scheduled the late probes");
          const [before, after] = await late;
          const past = (ranAt: number) => `exp+${(ranAt / 1000 - exp).toFixed(1)} s`;
          timings.push(`expiring token: ${before.result.status} at ${past(before.ranAt)}`);
          timings.push(`expiring token: ${after.result.status} at ${past(after.ranAt)}`);
          assert.ok(before.ranAt / 1000 < exp + 59, `first late probe ran at ${past(before.ranAt)}`);
          assert.equal(before.result.status, "200", before.result.body);
          assert.ok(after.ranAt / 1000 > exp + 61, `second late probe ran at ${past(after.ranAt)}`);
          assert.equal(after.result.status, "401", after.result.body);
          assert.equal(after.result.body, "Jwt is expired");
          assert.match(after.result.headers["www-authenticate"], /error="invalid_token"/);
        },
      );
    } finally {
      timers.forEach(clearTimeout);
      note("total", Date.now() - started);
      figure(timings.join("\n"));
      await labDown(lab);
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
