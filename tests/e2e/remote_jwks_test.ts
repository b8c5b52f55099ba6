/**
 * DISCO_JWT_ENABLE_REMOTE_JWKS end to end: meshd in-process (CA, config directory) and the real proxy
 * program in front of real httpbin, with JWKS servers on 127.0.0.1 that log each request's
 * user agent (meshd's and the proxy's differ), and curl as the client.
 *
 * - `proxy`: meshd never contacts the JWKS server, the proxy does; before its first good fetch
 *   tokens get 401 and tokenless requests pass; valid token 200, unknown key 401; the server down
 *   keeps the last keys (config_dump says FAILING, /stats counts failures); rotated keys picked up.
 * - `hybrid`: a jwksUri on a registry host (a ServiceEntry whose endpoint is the JWKS server) is
 *   fetched by the proxy, an external one (an IP) by meshd.
 * - `meshd`: meshd restarts while the JWKS server is down and pushes the provider without keys; the
 *   proxy keeps its last good keys (valid token 200), and meshd says it has no key set yet. Through
 *   the same proxy, a forged second token (`?access_token`, a second `Authorization`) is 401.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import type { JwksFetchEvent } from "../../meshd/jwks/resolver.ts";
import { keptAfterFailure } from "../../shared/internal/jwks/refresher.ts";
import { serveDebug } from "../../meshd/monitoring/http_servers.ts";
import { type MeshdProxyDump, syncDiff } from "../../meshctl/proxy_status/diff.ts";
import type { ConfigDump } from "../../meshctl/proxy_admin.ts";
import { MESHD_JWKS_USER_AGENT } from "../../meshd/jwks/resolver.ts";
import { PROXY_JWKS_USER_AGENT } from "../../proxy/jwks/fetcher.ts";
import { startCa, startMeshd } from "../integration/meshd_support.ts";
import { curl, Httpbin } from "../../proxy/inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { type ProxyProcess, startProxyProcess } from "../../proxy/test_support.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { figure } from "../../shared/internal/testing/figures.ts";

const HTTPBIN_IP = "127.0.0.2";
const PORT = 8000;

const WORKLOAD = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: ${HTTPBIN_IP}, labels: {app: httpbin}, serviceAccount: httpbin}
`;

function requestAuthentication(rules: { issuer: string; jwksUri: string }[]): string {
  return `apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  jwtRules:
${rules.map((r) => `  - {issuer: "${r.issuer}", jwksUri: "${r.jwksUri}"}`).join("\n")}
`;
}

async function keyPair(issuer: string, kid: string) {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256" };
  const sign = () =>
    new SignJWT({ iss: issuer, sub: "user-1", exp: Math.floor(Date.now() / 1000) + 3600 })
      .setProtectedHeader({ alg: "ES256", kid })
      .sign(privateKey);
  return { jwk, sign };
}

/** A JWKS server on a fixed port that the test stops and starts again; logs user agents. */
class JwksServer {
  readonly userAgents: string[] = [];
  #server: Deno.HttpServer | undefined;
  constructor(readonly port: number) {}
  start(keys: object[]): void {
    const body = JSON.stringify({ keys });
    this.#server = Deno.serve({ hostname: "127.0.0.1", port: this.port, onListen() {} }, (req) => {
      this.userAgents.push(req.headers.get("user-agent") ?? "");
      return new Response(body, { headers: { "content-type": "application/json" } });
    });
  }
  async stop(): Promise<void> {
    await this.#server?.shutdown();
    this.#server = undefined;
  }
}

async function status(
  path: string,
  token?: string,
  more: string[] = [],
): Promise<{ status: number; body: string }> {
  const args = ["-s", "--max-time", "3", "-o", "-", "-w", "\n%{http_code}", ...more];
  if (token) args.push("-H", `authorization: Bearer ${token}`);
  const r = await curl([...args, `http://${HTTPBIN_IP}:${PORT}${path}`]);
  const cut = r.stdout.lastIndexOf("\n");
  return { status: Number(r.stdout.slice(cut + 1)), body: r.stdout.slice(0, cut) };
}

async function expectStatus(want: number, token: string | undefined, ms = 8000): Promise<number> {
  const start = Date.now();
  let last = { status: 0, body: "" };
  while (Date.now() - start < ms) {
    last = await status("/ip", token);
    if (last.status === want) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`not ${want} within ${ms} ms; last ${last.status} ${last.body.slice(0, 200)}`);
}

interface JwksDump {
  sources: {
    source: string;
    state: string;
    hasKeys: boolean;
    consecutiveFailures: number;
    lastError?: string;
  }[];
  counters: { success: number; failed: number };
  inForce: string[];
  keptOverConfig: { source: string; issuer: string; reason: string }[];
}

async function jwksDump(proxy: ProxyProcess): Promise<JwksDump> {
  const r = await fetch(`http://127.0.0.1:${proxy.adminPort}/config_dump`);
  const dump = await r.json() as { configs: { "@type": string; agent?: { jwks: JwksDump } }[] };
  return dump.configs.find((c) => c["@type"].endsWith("MeshConfigDump"))!.agent!.jwks;
}

/** The providers of the proxy's /config_dump `jwt_policies`: what meshd sent, not what the proxy fetched. */
async function dumpedProviders(proxy: ProxyProcess): Promise<Record<string, unknown>[]> {
  const r = await fetch(`http://127.0.0.1:${proxy.adminPort}/config_dump`);
  const dump = await r.json() as {
    configs: { "@type": string; jwt_policies?: { resources: Record<string, { providers: [] }> } }[];
  };
  const mesh = dump.configs.find((c) => c["@type"].endsWith("MeshConfigDump"))!;
  return Object.values(mesh.jwt_policies!.resources).flatMap((p) => p.providers);
}

async function stat(proxy: ProxyProcess, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${proxy.adminPort}/stats?filter=jwt_authn`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}: `));
  return Number(line?.split(": ")[1]);
}

async function until(cond: () => Promise<boolean> | boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** meshd, httpbin and its proxy, for one mode; `fn` runs with them and everything is torn down. */
async function withMesh(
  jwksFetchMode: "meshd" | "hybrid" | "proxy",
  fn: (m: {
    config: string;
    proxy: ProxyProcess;
    meshdFetches: JwksFetchEvent[];
    /** meshd's /debug/config_dump for the proxy (what meshctl proxy-status compares). */
    meshdDump(): Promise<MeshdProxyDump>;
    /**
     * Stops meshd and starts a new one on the same port and config (its JWKS resolver starts empty);
     * `meshdDump` stays the first meshd's.
     */
    restartMeshd(): Promise<void>;
  }) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "remote-jwks-e2e-" });
  const config = join(dir, "config");
  await Deno.mkdir(config);
  await Deno.writeTextFile(join(config, "workload.yaml"), WORKLOAD);
  const meshdFetches: JwksFetchEvent[] = [];
  const ca = await startCa(join(dir, "ca"));
  const meshdOptions = {
    ca,
    jwksFetchMode,
    jwks: {
      refreshIntervalMs: 300,
      insecureSkipVerify: false,
      retryInitialMs: 100,
      onFetch: (e: JwksFetchEvent) => meshdFetches.push(e),
    },
  };
  let meshd = await startMeshd(config, meshdOptions);
  await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
  const app = await Httpbin.start();
  const debug = serveDebug(meshd.server.debugPages, { host: "127.0.0.1", port: 0 });
  const restartMeshd = async () => {
    await meshd.stop();
    meshd = await startMeshd(config, { ...meshdOptions, securePort: meshd.securePort });
  };
  const meshdDump = async () =>
    await (await fetch(`http://127.0.0.1:${debug.addr.port}/debug/config_dump?proxyID=foo/httpbin-1`))
      .json() as MeshdProxyDump;
  let proxy: ProxyProcess | undefined;
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
      concurrency: 2,
      args: [`--inbound=${PORT}=127.0.0.1:${app.port}`],
    });
    await fn({ config, proxy, meshdFetches, meshdDump, restartMeshd });
  } finally {
    await proxy?.stop();
    await debug.shutdown();
    await app.stop();
    await meshd.stop();
    await ca.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test(requires(httpbinMissing(), {
  name:
    "e2e: DISCO_JWT_ENABLE_REMOTE_JWKS=proxy: the proxy fetches, refreshes and keeps the keys; meshd never",
  async fn(t) {
    const ISS = "proxy-fetched@mesh.test";
    const k1 = await keyPair(ISS, "k1");
    const k2 = await keyPair(ISS, "k2");
    const jwks = new JwksServer(freePort());
    try {
      await withMesh("proxy", async ({ config, proxy, meshdFetches, meshdDump }) => {
        await t.step("before the first good fetch: tokens 401, tokenless requests pass", async () => {
          await Deno.writeTextFile(
            join(config, "ra.yaml"),
            requestAuthentication([{ issuer: ISS, jwksUri: `http://127.0.0.1:${jwks.port}/keys` }]),
          );
          await expectStatus(401, await k1.sign());
          assert.equal((await status("/ip")).status, 200);
          await until(async () => (await jwksDump(proxy)).sources[0]?.state === "FAILING", "a failed fetch");
          const dump = await jwksDump(proxy);
          assert.equal(dump.sources[0].hasKeys, false);
          assert.match(dump.sources[0].lastError!, /ECONNREFUSED|refused/i);
          assert.equal(
            (await status("/ip", await k1.sign())).body,
            "Jwt verification fails: Jwks is not available yet",
          );
        });

        await t.step("the server comes up: the proxy fetches, valid token 200, unknown key 401", async () => {
          jwks.start([k1.jwk]);
          figure(
            `keys in force ${await expectStatus(200, await k1.sign())} ms after the server came up`,
          );
          const bad = await status("/ip", await k2.sign());
          assert.equal(bad.status, 401);
          assert.equal(bad.body, "Jwks doesn't have key to match kid or alg from Jwt");
          assert.equal((await status("/ip")).status, 200);
          assert.ok(await stat(proxy, "jwt_authn.jwks_fetch_success") >= 1);
          assert.equal((await jwksDump(proxy)).sources[0].state, "OK");
          // config_dump shows the policy as meshd sent it, so meshctl proxy-status compares it equal.
          const [provider] = await dumpedProviders(proxy);
          assert.equal(provider.jwksFetcher, "PROXY");
          assert.equal(provider.jwks, "");
          assert.equal(provider.jwksRefreshIntervalMs, 300);
        });

        await t.step("the server goes down: the last good keys stay in force", async () => {
          await jwks.stop();
          const failedBefore = await stat(proxy, "jwt_authn.jwks_fetch_failed");
          await until(
            async () => (await stat(proxy, "jwt_authn.jwks_fetch_failed")) >= failedBefore + 3,
            "three failed refreshes",
          );
          const dump = await jwksDump(proxy);
          assert.equal(dump.sources[0].state, "FAILING");
          assert.equal(dump.sources[0].hasKeys, true);
          assert.equal((await status("/ip", await k1.sign())).status, 200);
          assert.equal((await status("/ip", await k2.sign())).status, 401);
          assert.match(proxy.stderr(), /jwt\tJWKS fetch failed; keeping the last good key set/);
        });

        await t.step(
          "it comes back with rotated keys: the new key works, the old one no longer",
          async () => {
            jwks.start([k2.jwk]);
            figure(`rotated keys in force after ${await expectStatus(200, await k2.sign(), 10_000)} ms`);
            assert.equal((await status("/ip", await k1.sign())).status, 401);
          },
        );

        await t.step(
          "one fetch per refresh for the whole proxy, not one per worker (2 workers)",
          async () => {
            // Refresh every 300 ms: at most 1500/300 + 1 fetches in 1.5 s by one fetcher, twice that by two.
            // Timers that fire late only lower the count.
            const before = jwks.userAgents.length;
            await new Promise((r) => setTimeout(r, 1500));
            const fetches = jwks.userAgents.length - before;
            figure(`${fetches} fetches in 1.5 s at a 300 ms refresh interval`);
            assert.ok(fetches >= 1 && fetches <= 6, `${fetches} fetches`);
          },
        );

        await t.step(
          "meshctl proxy-status: the proxy's JwtPolicy equals meshd's (keys fetched apart)",
          async () => {
            const dump = await (await fetch(`http://127.0.0.1:${proxy.adminPort}/config_dump`))
              .json() as ConfigDump;
            const diffs = syncDiff(await meshdDump(), dump);
            const jwt = diffs.find((d) => d.type === "JwtPolicy")!;
            assert.ok(jwt.match, jwt.diff.join("\n"));
          },
        );

        await t.step("meshd never contacted the JWKS server; the proxy did", () => {
          assert.deepEqual(meshdFetches, []);
          assert.ok(jwks.userAgents.length >= 2);
          assert.deepEqual(new Set(jwks.userAgents), new Set([PROXY_JWKS_USER_AGENT]));
        });
      });
    } finally {
      await jwks.stop();
    }
  },
}));

Deno.test(requires(httpbinMissing(), {
  name:
    "e2e: DISCO_JWT_ENABLE_REMOTE_JWKS=hybrid: a registry host is fetched by the proxy, an external one by meshd",
  async fn() {
    const meshIssuer = "mesh-idp@mesh.test";
    const externalIssuer = "external-idp@mesh.test";
    const meshKey = await keyPair(meshIssuer, "m1");
    const externalKey = await keyPair(externalIssuer, "e1");
    const meshJwks = new JwksServer(freePort());
    const externalJwks = new JwksServer(freePort());
    meshJwks.start([meshKey.jwk]);
    externalJwks.start([externalKey.jwk]);
    try {
      await withMesh("hybrid", async ({ config, proxy, meshdFetches }) => {
        // The mesh JWKS server as a registry service: jwks.idp.svc.cluster.local:80 → 127.0.0.1:<port>.
        await Deno.writeTextFile(
          join(config, "idp.yaml"),
          `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: jwks, namespace: idp}
spec:
  hosts: [jwks.idp.svc.cluster.local]
  ports: [{name: http, number: 80, targetPort: ${meshJwks.port}, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.1}]
`,
        );
        await Deno.writeTextFile(
          join(config, "ra.yaml"),
          requestAuthentication([
            { issuer: meshIssuer, jwksUri: "http://jwks.idp.svc.cluster.local/keys" },
            { issuer: externalIssuer, jwksUri: `http://127.0.0.1:${externalJwks.port}/keys` },
          ]),
        );
        // The policy is in force (a bad token is refused), then both issuers' keys arrive.
        await expectStatus(401, "bad.token.here");
        await expectStatus(200, await meshKey.sign());
        await expectStatus(200, await externalKey.sign());
        assert.deepEqual(new Set(meshJwks.userAgents), new Set([PROXY_JWKS_USER_AGENT]));
        assert.deepEqual(new Set(externalJwks.userAgents), new Set([MESHD_JWKS_USER_AGENT]));
        assert.ok(meshdFetches.every((e) => e.source === `http://127.0.0.1:${externalJwks.port}/keys`));
        const dump = await jwksDump(proxy);
        assert.deepEqual(dump.sources.map((s) => [s.source, s.state]), [
          ["http://jwks.idp.svc.cluster.local/keys", "OK"],
        ]);
      });
    } finally {
      await meshJwks.stop();
      await externalJwks.stop();
    }
  },
}));

Deno.test(requires(httpbinMissing(), {
  name:
    "e2e: DISCO_JWT_ENABLE_REMOTE_JWKS=meshd: meshd restarts while the JWKS server is down, the proxy keeps its keys; every token is verified",
  async fn(t) {
    const ISS = "meshd-fetched@mesh.test";
    const key = await keyPair(ISS, "k1");
    const forger = await keyPair(ISS, "k1");
    const jwks = new JwksServer(freePort());
    jwks.start([key.jwk]);
    try {
      await withMesh("meshd", async ({ config, proxy, meshdFetches, restartMeshd }) => {
        await Deno.writeTextFile(
          join(config, "ra.yaml"),
          requestAuthentication([{ issuer: ISS, jwksUri: `http://127.0.0.1:${jwks.port}/keys` }]),
        );
        // The policy is in force (a bad token is refused), then meshd's keys arrive.
        await expectStatus(401, "bad.token.here");
        await expectStatus(200, await key.sign());
        const valid = await key.sign();
        const forged = await forger.sign();

        await t.step("a forged second token through the proxy: 401 (curl)", async () => {
          const viaQuery = await status(`/ip?access_token=${forged}`, valid);
          assert.deepEqual([viaQuery.status, viaQuery.body], [401, "Jwt verification fails"]);
          const twoHeaders = await status("/ip", valid, ["-H", `authorization: Bearer ${forged}`]);
          assert.deepEqual([twoHeaders.status, twoHeaders.body], [401, "Jwt verification fails"]);
          assert.equal((await status(`/ip?access_token=${valid}`, valid)).status, 200);
        });

        await t.step(
          "meshd restarts while the JWKS server is down: a valid token still gets 200",
          async () => {
            await jwks.stop();
            const before = meshdFetches.length;
            await restartMeshd();
            // The new meshd has no key set and pushes the provider without one.
            await until(() => meshdFetches.slice(before).some((e) => !e.ok), "the new meshd's failed fetch");
            const failed = meshdFetches.slice(before).find((e) => !e.ok)!;
            assert.equal(failed.hasKeys, false);
            assert.equal(keptAfterFailure(failed), "no good key set yet");
            await until(async () => (await dumpedProviders(proxy))[0]?.jwks === "", "the key-less push");
            assert.equal((await status("/ip", await key.sign())).status, 200);
            assert.equal((await status("/ip", await forger.sign())).status, 401);
            const uri = `http://127.0.0.1:${jwks.port}/keys`;
            const dump = await jwksDump(proxy);
            assert.deepEqual(dump.inForce, [uri]);
            assert.deepEqual(dump.keptOverConfig, [{
              source: uri,
              issuer: ISS,
              reason: "Jwks is not available yet",
            }]);
            assert.match(
              proxy.stderr(),
              /JWKS: no usable key set in the config; keeping the last good one for issuer meshd-fetched@mesh\.test/,
            );
          },
        );

        await t.step("the JWKS server returns: meshd's new fetch is pushed and used", async () => {
          jwks.start([key.jwk]);
          await until(async () => (await dumpedProviders(proxy))[0]?.jwks !== "", "the push with keys");
          assert.equal((await status("/ip", await key.sign())).status, 200);
        });
      });
    } finally {
      await jwks.stop();
    }
  },
}));
