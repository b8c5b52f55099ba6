/**
 * End-user authentication and authorization end to end: meshd in-process (CA, config directory,
 * JWKS resolver refreshing every 300 ms), a JWKS server on 127.0.0.1 (Deno.serve, keys made with
 * jose), the proxy of httpbin.foo on 127.0.0.2 in front of real httpbin (gunicorn), and plain curl
 * as the client. Covers the policies seed's RequestAuthentication and DENY notRequestPrincipals
 * rows, the debug header, and the JWKS server going down (the last good keys stay) and coming back
 * with rotated keys.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import type { JwksFetchEvent } from "../../meshd/jwks/resolver.ts";
import { startCa, startMeshd } from "../integration/meshd_support.ts";
import { DEFAULT_PROXY_SETTINGS } from "../../shared/proxy_settings/mod.ts";
import { curl, Httpbin } from "../../proxy/inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { type ProxyProcess as ProxyProc, startProxyProcess } from "../../proxy/test_support.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { figure } from "../../shared/internal/testing/figures.ts";

const HTTPBIN_IP = "127.0.0.2";
const PORT = 8000;
const ISS = "testing@secure.istio.io";

const WORKLOAD = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: ${HTTPBIN_IP}, labels: {app: httpbin}, serviceAccount: httpbin}
`;
const requestAuthentication = (jwksUri: string) =>
  `apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt-example, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  jwtRules:
  - issuer: ${ISS}
    jwksUri: ${jwksUri}
    outputClaimToHeaders: [{header: x-jwt-sub, claim: sub}]
`;
const REQUIRE_JWT_ON_HEADERS = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: require-jwt, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  action: DENY
  rules:
  - from: [{source: {notRequestPrincipals: ["*"]}}]
    to: [{operation: {paths: ["/headers"]}}]
`;

async function keyPair(kid: string) {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256" };
  const sign = (claims: Record<string, unknown> = {}) =>
    new SignJWT({ iss: ISS, sub: "user-1", exp: Math.floor(Date.now() / 1000) + 3600, ...claims })
      .setProtectedHeader({ alg: "ES256", kid })
      .sign(privateKey);
  return { jwk, sign };
}

/** A JWKS server on a fixed port that the test stops and starts again. */
class JwksServer {
  #server: Deno.HttpServer | undefined;
  constructor(readonly port: number) {}
  get url(): string {
    return `http://127.0.0.1:${this.port}/keys`;
  }
  start(keys: object[]): void {
    const body = JSON.stringify({ keys });
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: this.port, onListen() {} },
      () => new Response(body, { headers: { "content-type": "application/json" } }),
    );
  }
  async stop(): Promise<void> {
    await this.#server?.shutdown();
    this.#server = undefined;
  }
}

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

async function request(path: string, headers: Record<string, string> = {}): Promise<Reply> {
  const args = ["-s", "-i", "--max-time", "3"];
  for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}: ${v}`);
  const r = await curl([...args, `http://${HTTPBIN_IP}:${PORT}${path}`]);
  if (r.code !== 0) return { status: 0, headers: {}, body: r.stderr };
  const [head, ...rest] = r.stdout.split("\r\n\r\n");
  const lines = head.split("\r\n");
  const out: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    out[l.slice(0, l.indexOf(":")).toLowerCase()] = l.slice(l.indexOf(":") + 1).trim();
  }
  return { status: Number(lines[0].split(" ")[1]), headers: out, body: rest.join("\r\n\r\n") };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Polls until `path` answers `status` (a config push or key fetch takes effect); returns the ms it took. */
async function expectStatus(
  path: string,
  headers: Record<string, string>,
  status: number,
  ms = 5000,
): Promise<number> {
  const start = Date.now();
  let last: Reply | undefined;
  while (Date.now() - start < ms) {
    last = await request(path, headers);
    if (last.status === status) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${path}: not ${status} within ${ms} ms; last ${last?.status} ${last?.body.slice(0, 200)}`);
}

Deno.test(requires(httpbinMissing(), {
  name: "e2e: RequestAuthentication with meshd-fetched JWKS and AuthorizationPolicy through a real proxy",
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "authz-e2e-" });
    const config = join(dir, "config");
    await Deno.mkdir(config);
    await Deno.writeTextFile(join(config, "workload.yaml"), WORKLOAD);
    const k1 = await keyPair("k1");
    const k2 = await keyPair("k2");
    const jwks = new JwksServer(freePort());
    jwks.start([k1.jwk]);
    const fetches: JwksFetchEvent[] = [];
    const ca = await startCa(join(dir, "ca"));
    const meshd = await startMeshd(config, {
      ca,
      // The debug header's explanation is for listed sources only: curl connects from loopback.
      proxySettings: {
        ...DEFAULT_PROXY_SETTINGS,
        denialExplanation: { principals: [], ipBlocks: ["127.0.0.1"] },
      },
      jwks: {
        refreshIntervalMs: 300,
        insecureSkipVerify: false,
        retryInitialMs: 100,
        onFetch: (e) => fetches.push(e),
      },
    });
    await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
    const app = await Httpbin.start();
    let proxy: ProxyProc | undefined;
    try {
      proxy = await startProxyProcess({
        dir,
        ca,
        discoveryAddress: `127.0.0.1:${meshd.securePort}`,
        namespace: "foo",
        serviceAccount: "httpbin",
        workloadEntry: "httpbin-1",
        address: HTTPBIN_IP,
        labels: "app=httpbin",
        args: [`--inbound=${PORT}=127.0.0.1:${app.port}`],
      });
      assert.equal((await request("/headers")).status, 200);

      await t.step("RequestAuthentication: valid token 200, invalid 401, none 200", async () => {
        await Deno.writeTextFile(join(config, "ra.yaml"), requestAuthentication(jwks.url));
        // The policy arrives first (its keys empty until meshd's first fetch), then the keys.
        await expectStatus("/headers", bearer("bad.token.here"), 401);
        figure(
          `keys in force ${await expectStatus("/headers", bearer(await k1.sign()), 200)} ms after the policy`,
        );
        const r = await request("/headers", bearer(await k1.sign()));
        const seen = JSON.parse(r.body).headers;
        assert.equal(seen.Authorization, undefined, "token stripped");
        assert.equal(seen["X-Jwt-Sub"], "user-1");
        const bad = await request("/headers", bearer(await k2.sign()));
        assert.equal(bad.status, 401);
        assert.equal(bad.body, "Jwks doesn't have key to match kid or alg from Jwt");
        assert.match(
          bad.headers["www-authenticate"],
          /^Bearer realm="http:\/\/127\.0\.0\.2:8000\/headers", error="invalid_token"$/,
        );
        assert.equal((await request("/headers")).status, 200);
        assert.ok(fetches.some((e) => e.ok && e.source === jwks.url));
      });

      await t.step("60 s clock skew: 30 s past exp 200, 90 s past exp 401", async () => {
        const now = Math.floor(Date.now() / 1000);
        assert.equal((await request("/ip", bearer(await k1.sign({ exp: now - 30 })))).status, 200);
        const r = await request("/ip", bearer(await k1.sign({ exp: now - 90 })));
        assert.equal(r.status, 401);
        assert.equal(r.body, "Jwt is expired");
      });

      await t.step(
        "DENY notRequestPrincipals [*] on /headers: tokenless 403, /ip 200, token 200",
        async () => {
          await Deno.writeTextFile(join(config, "ap.yaml"), REQUIRE_JWT_ON_HEADERS);
          await expectStatus("/headers", {}, 403);
          const denied = await request("/headers");
          assert.equal(denied.body, "RBAC: access denied");
          assert.equal((await request("/ip")).status, 200);
          assert.equal((await request("/headers", bearer(await k1.sign()))).status, 200);
          const debug = await request("/headers", { "x-mesh-authz-debug": "1" });
          assert.equal(debug.headers["x-mesh-authz-reason"], "denied by DENY policy foo/require-jwt rule 0");
          assert.match(proxy!.stderr(), /request denied.*policy=foo\/require-jwt.*rule=0/);
        },
      );

      await t.step(
        "the JWKS server goes down: meshd keeps the last good keys, tokens still pass",
        async () => {
          await jwks.stop();
          const failedBefore = fetches.filter((e) => !e.ok).length;
          const start = Date.now();
          while (fetches.filter((e) => !e.ok).length < failedBefore + 3) {
            assert.ok(Date.now() - start < 10_000, "three failed refreshes within 10 s");
            await new Promise((r) => setTimeout(r, 50));
          }
          assert.equal((await request("/headers", bearer(await k1.sign()))).status, 200);
          assert.equal((await request("/headers", bearer(await k2.sign()))).status, 401);
        },
      );

      await t.step("it comes back with rotated keys: the new key works, the old one no longer", async () => {
        jwks.start([k2.jwk]);
        const took = await expectStatus("/headers", bearer(await k2.sign()), 200, 10_000);
        figure(`rotated keys in force after ${took} ms`);
        assert.equal((await request("/headers", bearer(await k1.sign()))).status, 401);
      });

      await t.step("deleting the policies restores access without a token and ignores tokens", async () => {
        await Deno.remove(join(config, "ap.yaml"));
        await Deno.remove(join(config, "ra.yaml"));
        await expectStatus("/headers", bearer("bad.token.here"), 200);
      });
    } finally {
      await proxy?.stop();
      await app.stop();
      await jwks.stop();
      await meshd.stop();
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
