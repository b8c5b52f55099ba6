/**
 * JWT authentication and authorization on the inbound listener, with real httpbin (gunicorn) and
 * real curl: the snapshot holds the resources meshd would push (decoded mesh.v1.JwtPolicy with
 * inline keys, mesh.v1.Authorization), changed between steps as a push would.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { InboundListener } from "../inbound/listener.ts";
import {
  curl,
  declaredHttp,
  Httpbin,
  mtlsFixture,
  RecordingLog,
  snapshotOf,
} from "../inbound/test_support.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { DEFAULT_PROXY_SETTINGS, type ProxySettings } from "../../shared/proxy_settings/mod.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

const ISS = "testing@secure.istio.io";
const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/httpbin";
const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";

const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
const JWKS = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256" }] });
const token = (claims: Record<string, unknown> = {}) =>
  new SignJWT({
    iss: ISS,
    sub: "user-1",
    exp: Math.floor(Date.now() / 1000) + 3600,
    groups: ["g1"],
    ...claims,
  })
    .setProtectedHeader({ alg: "RS256", kid: "k1" })
    .sign(privateKey);

const provider = (extra: Record<string, unknown> = {}) => ({
  name: "jwt",
  namespace: "foo",
  providers: [{
    issuer: ISS,
    audiences: [],
    jwks: JWKS,
    jwksUri: "",
    fromHeaders: [],
    fromParams: [],
    fromCookies: [],
    outputPayloadToHeader: "",
    forwardOriginalToken: false,
    outputClaimToHeaders: [{ header: "x-jwt-sub", claim: "sub" }],
    spaceDelimitedClaims: [],
    ...extra,
  }],
});
const policy = (name: string, action: string, rules: unknown[]) => ({
  name,
  namespace: "foo",
  action,
  rules,
});
const TOKEN_ON_HEADERS = policy("require-jwt", "DENY", [{
  from: [{ source: { notRequestPrincipals: ["*"] } }],
  to: [{ operation: { paths: ["/headers"] } }],
}]);

Deno.test(requires(httpbinMissing(), {
  name: "inbound filters: RequestAuthentication and AuthorizationPolicy in front of httpbin (real curl)",
  async fn(t) {
    const { cert, mtls, files } = await mtlsFixture(SERVER_ID, CLIENT_ID);
    const httpbin = await Httpbin.start();
    let revision = 1;
    let snapshot: RuntimeSnapshot = snapshotOf("PERMISSIVE", cert);
    let settings: ProxySettings = DEFAULT_PROXY_SETTINGS;
    const apply = (authz: Record<string, unknown>[], jwt: Record<string, unknown>[] = []) => {
      const base = snapshotOf("PERMISSIVE", cert, [], ++revision);
      snapshot = {
        ...base,
        workload: { ...base.workload!, settings },
        authorizations: Object.fromEntries(authz.map((a) => [`foo/${a.name}`, a])),
        jwtPolicies: Object.fromEntries(jwt.map((j) => [`foo/${j.name}`, j])),
      };
    };
    const log = new RecordingLog();
    // curl offers no Istio ALPN: on a port not declared HTTP its TLS would pass to the app (../inbound/front.ts).
    const declared = declaredHttp(8000);
    const listener = new InboundListener({
      address: "127.0.0.1",
      port: 0,
      appAddress: "127.0.0.1",
      appPort: httpbin.port,
      mtlsPort: 8000,
      snapshot: () => declared(snapshot),
      log,
    });
    await listener.start();
    const http = `http://127.0.0.1:${listener.port}`;
    const https = `https://127.0.0.1:${listener.port}`;
    /** status, headers and body of one request. */
    const get = async (args: string[]) => {
      const r = await curl(["-s", "-i", ...args]);
      assert.equal(r.code, 0, r.stderr);
      const [head, ...rest] = r.stdout.split("\r\n\r\n");
      const lines = head.split("\r\n");
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        headers[l.slice(0, l.indexOf(":")).toLowerCase()] = l.slice(l.indexOf(":") + 1).trim();
      }
      return { status: Number(lines[0].split(" ")[1]), headers, body: rest.join("\r\n\r\n") };
    };
    const bearer = async (
      claims?: Record<string, unknown>,
    ) => ["-H", `Authorization: Bearer ${await token(claims)}`];
    try {
      await t.step(
        "no policies: the path is still BASE-normalized, the query untouched; %00 is 400",
        async () => {
          const seen = async (target: string) => {
            const r = await get(["--path-as-is", `${http}${target}`]);
            assert.equal(r.status, 200, target);
            const body = JSON.parse(r.body);
            return { path: new URL(body.url).pathname, args: body.args };
          };
          assert.equal((await seen("/anything/a/../b")).path, "/anything/b");
          assert.equal((await seen("/anything/%61/./c")).path, "/anything/a/c");
          assert.deepEqual(await seen("/anything/plain?q=/../x"), {
            path: "/anything/plain",
            args: { q: "/../x" },
          });
          assert.equal((await get(["--path-as-is", `${http}/anything/%00`])).status, 400);
        },
      );

      await t.step(
        "RequestAuthentication only: no token 200, valid 200, invalid 401 with WWW-Authenticate",
        async () => {
          apply([], [provider()]);
          assert.equal((await get([`${http}/headers`])).status, 200);
          const ok = await get([...await bearer(), "-H", "x-jwt-sub: forged", `${http}/headers`]);
          assert.equal(ok.status, 200);
          const seen = JSON.parse(ok.body).headers;
          assert.equal(seen.Authorization, undefined, "the token is stripped");
          assert.equal(seen["X-Jwt-Sub"], "user-1", "the claim header, not the forged one");
          const bad = await get(["-H", "Authorization: Bearer abc.def.ghi", `${http}/headers?x=1`]);
          assert.equal(bad.status, 401);
          assert.equal(
            bad.headers["www-authenticate"],
            `Bearer realm="http://127.0.0.1:${listener.port}/headers", error="invalid_token"`,
          );
          const other = await get([
            "-H",
            `Authorization: Bearer ${await token({ iss: "someone-else" })}`,
            `${http}/ip`,
          ]);
          assert.equal(other.status, 401);
          assert.equal(other.body, "Jwt issuer is not configured");
        },
      );

      await t.step("clock skew: 50 s past exp is accepted, 70 s past is 401 'Jwt is expired'", async () => {
        const now = Math.floor(Date.now() / 1000);
        assert.equal((await get([...await bearer({ exp: now - 50 }), `${http}/ip`])).status, 200);
        const r = await get([...await bearer({ exp: now - 70 }), `${http}/ip`]);
        assert.equal(r.status, 401);
        assert.equal(r.body, "Jwt is expired");
      });

      await t.step("access_token parameter, and forwardOriginalToken keeps the header", async () => {
        assert.equal((await get([`${http}/ip?access_token=${await token()}`])).status, 200);
        assert.equal((await get([`${http}/ip?access_token=bad`])).status, 401);
        apply([], [provider({ forwardOriginalToken: true })]);
        const r = await get([...await bearer(), `${http}/headers`]);
        assert.match(JSON.parse(r.body).headers.Authorization, /^Bearer /);
      });

      await t.step(
        "seed: DENY notRequestPrincipals on /headers: 403 tokenless, /ip 200, token 200",
        async () => {
          apply([TOKEN_ON_HEADERS], [provider()]);
          const denied = await get([`${http}/headers`]);
          assert.equal(denied.status, 403);
          assert.equal(denied.body, "RBAC: access denied");
          assert.equal(denied.headers["x-mesh-authz-reason"], undefined);
          assert.equal((await get([`${http}/ip`])).status, 200);
          assert.equal((await get([...await bearer(), `${http}/headers`])).status, 200);
          const entry = log.entries.findLast((e) => e.msg === "request denied");
          assert.equal(entry?.fields?.policy, "foo/require-jwt");
          assert.equal(entry?.fields?.rule, 0);
          assert.equal(entry?.fields?.reason, "denied by DENY policy foo/require-jwt rule 0");
        },
      );

      await t.step(
        "x-mesh-authz-debug: 1 from an unlisted source: no explanation (the default)",
        async () => {
          for (const args of [[`${http}/headers`], [...mtls, `${https}/headers`]]) {
            const r = await get(["-H", "x-mesh-authz-debug: 1", ...args]);
            assert.equal(r.status, 403);
            assert.equal(r.body, "RBAC: access denied");
            assert.equal(r.headers["x-mesh-authz-reason"], undefined, args.join(" "));
          }
          const entry = log.entries.findLast((e) => e.msg === "request denied");
          assert.equal(
            entry?.fields?.reason,
            "denied by DENY policy foo/require-jwt rule 0",
            "the log says it",
          );
        },
      );

      await t.step(
        "denialExplanation principals: the listed peer over mutual TLS, not plain text",
        async () => {
          settings = {
            ...DEFAULT_PROXY_SETTINGS,
            denialExplanation: { principals: ["cluster.local/ns/foo/*"], ipBlocks: [] },
          };
          apply([TOKEN_ON_HEADERS], [provider()]);
          const r = await get(["-H", "x-mesh-authz-debug: 1", ...mtls, `${https}/headers`]);
          assert.equal(r.status, 403);
          assert.equal(r.headers["x-mesh-authz-reason"], "denied by DENY policy foo/require-jwt rule 0");
          const plain = await get(["-H", "x-mesh-authz-debug: 1", `${http}/headers`]);
          assert.equal(plain.headers["x-mesh-authz-reason"], undefined);
          const noAsk = await get([...mtls, `${https}/headers`]);
          assert.equal(noAsk.headers["x-mesh-authz-reason"], undefined, "only when asked");
        },
      );

      await t.step("denialExplanation ipBlocks (loopback): the deciding policy and rule", async () => {
        settings = {
          ...DEFAULT_PROXY_SETTINGS,
          denialExplanation: { principals: [], ipBlocks: ["127.0.0.1/32"] },
        };
        apply([TOKEN_ON_HEADERS], [provider()]);
        const r = await get(["-H", "x-mesh-authz-debug: 1", `${http}/headers`]);
        assert.equal(r.status, 403);
        assert.equal(r.headers["x-mesh-authz-reason"], "denied by DENY policy foo/require-jwt rule 0");
        const spoof = await get(["-H", "x-mesh-authz-debug: 1", "-H", "x-forwarded-for: 127.0.0.1", ...[
          "--interface",
          "127.0.0.3",
        ], `${http}/headers`]);
        assert.equal(spoof.status, 403);
        assert.equal(
          spoof.headers["x-mesh-authz-reason"],
          undefined,
          "X-Forwarded-For does not make a source listed",
        );
        apply([policy("allow-ip", "ALLOW", [{ to: [{ operation: { paths: ["/ip"] } }] }])]);
        const n = await get(["-H", "x-mesh-authz-debug: true", `${http}/headers`]);
        assert.equal(
          n.headers["x-mesh-authz-reason"],
          "denied: no rule of ALLOW policies foo/allow-ip matched",
        );
      });

      await t.step("ALLOW spec {} allows nothing; principals need mutual TLS", async () => {
        apply([policy("allow-nothing", "ALLOW", [])]);
        assert.equal((await get([`${http}/ip`])).status, 403);
        apply([
          policy("allow-sleep", "ALLOW", [{
            from: [{ source: { principals: ["cluster.local/ns/foo/sa/sleep"] } }],
          }]),
        ]);
        assert.equal((await get([...mtls, `${https}/ip`])).status, 200);
        assert.equal((await get([`${http}/ip`])).status, 403);
        apply([policy("allow-other", "ALLOW", [{ from: [{ source: { namespaces: ["bar"] } }] }])]);
        assert.equal((await get([...mtls, `${https}/ip`])).status, 403);
      });

      await t.step(
        "paths are normalized (BASE) for policies and for the application; query ignored",
        async () => {
          apply([policy("deny-admin", "DENY", [{ to: [{ operation: { paths: ["/anything/admin"] } }] }])]);
          assert.equal((await get(["--path-as-is", `${http}/anything/public/../admin`])).status, 403);
          assert.equal((await get(["--path-as-is", `${http}/anything/x/%2e%2e/admin?a=1`])).status, 403);
          const ok = await get(["--path-as-is", `${http}/anything/./public/../open?q=1`]);
          assert.equal(ok.status, 200);
          assert.equal(JSON.parse(ok.body).url, `http://127.0.0.1:${listener.port}/anything/open?q=1`);
          assert.equal((await get([`${http}/anything/a%00b`])).status, 400);
        },
      );

      await t.step("keep-alive after a 403 without body; a denied POST closes the connection", async () => {
        apply([policy("deny-ip", "DENY", [{ to: [{ operation: { paths: ["/ip"] } }] }])]);
        const r = await curl([
          ...["-s", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n"],
          `${http}/ip`,
          `${http}/get`,
        ]);
        assert.deepEqual(r.stdout.trim().split("\n"), ["403 1", "200 0"]);
        const p = await get(["-d", "x=1", `${http}/ip`]);
        assert.equal(p.status, 403);
        assert.equal(p.headers.connection, "close");
      });

      await t.step("conditions: request.auth.claims and request.headers", async () => {
        apply([
          policy("groups", "ALLOW", [{ when: [{ key: "request.auth.claims[groups]", values: ["g1"] }] }]),
        ], [provider()]);
        assert.equal((await get([...await bearer(), `${http}/ip`])).status, 200);
        assert.equal((await get([...await bearer({ groups: ["g2"] }), `${http}/ip`])).status, 403);
        apply([policy("hdr", "DENY", [{ when: [{ key: "request.headers[X-Block]", values: ["yes"] }] }])]);
        assert.equal((await get(["-H", "x-block: yes", `${http}/ip`])).status, 403);
        assert.equal((await get(["-H", "x-block: no", `${http}/ip`])).status, 200);
      });

      await t.step(
        "a policy the evaluator cannot compile (CUSTOM) denies everything (fail closed)",
        async () => {
          apply([policy("ext", "CUSTOM", [{}])]);
          const r = await get(["-H", "x-mesh-authz-debug: 1", `${http}/ip`]);
          assert.equal(r.status, 403);
          assert.match(
            r.headers["x-mesh-authz-reason"],
            /CUSTOM \(external authorization\) is not supported yet/,
          );
          apply([]);
          assert.equal((await get([`${http}/ip`])).status, 200);
        },
      );

      await t.step(
        "sidecar: remoteIpBlocks and remote.ip read the last X-Forwarded-For entry (Istio), XFF untouched",
        async () => {
          apply([
            policy("deny-remote", "DENY", [{ from: [{ source: { remoteIpBlocks: ["6.6.6.0/24"] } }] }]),
            policy("deny-cond", "DENY", [{ when: [{ key: "remote.ip", values: ["7.7.7.7"] }] }]),
          ]);
          const status = async (...xff: string[]) =>
            (await get([...xff.flatMap((v) => ["-H", `x-forwarded-for: ${v}`]), `${http}/ip`])).status;
          assert.equal(await status(), 200, "no XFF: the peer");
          assert.equal(await status("6.6.6.6"), 403);
          assert.equal(await status("7.7.7.7"), 403);
          assert.equal(await status("6.6.6.6, 10.0.0.1"), 200, "only the last entry counts");
          assert.equal(
            await status("10.0.0.1", "6.6.6.6"),
            403,
            "two fields are joined: the last one's entry",
          );
          assert.equal(await status("6.6.6.6, garbage"), 200, "not an address: the peer");
          assert.equal(await status("6.6.6.6,"), 200, "an empty last entry: the peer");
          const r = await get(["-H", "x-forwarded-for: 1.2.3.4", `${http}/headers?show_env=1`]);
          assert.equal(JSON.parse(r.body).headers["X-Forwarded-For"], "1.2.3.4", "a sidecar appends nothing");
        },
      );
    } finally {
      await listener.close();
      await httpbin.stop();
      await files.remove();
    }
  },
}));
