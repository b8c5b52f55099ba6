/**
 * meshd renews what it holds (issue 12, deliverable 5), end to end and in real time: a real `meshd
 * discovery` process with 60 s workload and serving certificates and a self-signed root of 3 minutes,
 * checked every 5 s with a grace period of 25 % (of the root's 5-minute life, NotBefore being 2 min back:
 * the root rotates 75 s before it expires, so about every 105 s, and each earlier root leaves the bundle
 * 75 s after its successor came), a sidecar pair (client proxy --outbound → server proxy
 * --inbound, STRICT mutual TLS) in front of Debian's httpbin, and steady sequential load (about 4
 * requests a second, on a keep-alive connection, every 10th on a new one) for five minutes. Every
 * request must get 200. At minute 4 a third proxy, given the roots meshd serves then on
 * /debug/rootCert, must become ready and reach httpbin.
 *
 * About 5.5 minutes. Throughput is not measured here (tests/bench has the proxy pair benchmark).
 *
 * @module
 */
import assert from "node:assert/strict";
import http from "node:http";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { BootstrapTokenIssuer } from "../../meshd/ca/mod.ts";
import { pemCertificates } from "../../shared/internal/ca/pem.ts";
import { Httpbin } from "../../proxy/inbound/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { type ProxyProcess, startProxyProcess } from "../../proxy/test_support.ts";
import { startMeshdProcess } from "./e2e_support.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { figure } from "../../shared/internal/testing/figures.ts";

const HOST = "httpbin.foo.svc.cluster.local:8000";
const LOAD_MS = 5 * 60_000;
const LATE_PROXY_AT_MS = 4 * 60_000;

const config = (inboundPort: number) =>
  `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: [httpbin.foo.svc.cluster.local]
  ports: [{name: http, number: 8000, targetPort: ${inboundPort}, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: 127.0.0.1, labels: {app: httpbin}, serviceAccount: httpbin}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
`;

/** One GET through the client proxy's outbound listener; the status, or the error's message. */
function get(outboundPort: number, agent: http.Agent | undefined, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port: outboundPort,
        path,
        headers: { host: HOST },
        agent: agent ?? false,
        timeout: 10_000,
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", (e) => resolve(`response error: ${e.message}`));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (e) => resolve(`request error: ${e.message}`));
    req.end();
  });
}

const count = (text: string, re: RegExp) => (text.match(re) ?? []).length;

Deno.test(requires(httpbinMissing(), {
  name:
    "cert rotation (5 min): 60 s certificates and a 3 min root rotate under load with 0 failed requests; a proxy started at minute 4 becomes ready",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "cert-rotation-e2e-" });
    const inboundPort = freePort();
    await Deno.mkdir(join(dir, "config"));
    await Deno.writeTextFile(join(dir, "config", "mesh.yaml"), config(inboundPort));
    const securePort = freePort();
    const monitoringPort = freePort();
    const httpPort = freePort();
    const meshd = await startMeshdProcess(dir, 0, [], {
      ports: { secure: securePort, monitoring: monitoringPort, http: httpPort },
      env: {
        DEFAULT_WORKLOAD_CERT_TTL: "60s",
        CA_SELF_SIGNED_CA_CERT_TTL: "3m",
        CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL: "5s",
        CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE: "25",
        CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR: "false",
      },
      ready: "meshd ready",
      timeoutMs: 30_000,
    });
    const trustBundle = async () => await (await fetch(`http://127.0.0.1:${httpPort}/debug/rootCert`)).text();
    const app = await Httpbin.start();
    const procs: ProxyProcess[] = [];
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const originalRoot = await trustBundle();
      await Deno.writeTextFile(join(dir, "root-cert.pem"), originalRoot);
      const tokens = await BootstrapTokenIssuer.open(join(dir, "ca"), {
        audiences: ["mesh-ca"],
        create: false,
      });
      const issuer = {
        issueBootstrapToken: (r: Parameters<BootstrapTokenIssuer["issue"]>[0]) => tokens.issue(r),
      };
      const common = { ca: issuer, discoveryAddress: `127.0.0.1:${securePort}`, namespace: "foo" };
      procs.push(
        await startProxyProcess({
          ...common,
          dir,
          serviceAccount: "httpbin",
          workloadEntry: "httpbin-1",
          address: "127.0.0.1",
          labels: "app=httpbin",
          args: ["--inboundBindAddress=127.0.0.1", `--inbound=${inboundPort}=127.0.0.1:${app.port}`],
        }),
      );
      const outboundPort = freePort();
      procs.push(
        await startProxyProcess({
          ...common,
          dir,
          serviceAccount: "sleep",
          workloadEntry: "sleep-1",
          address: "127.0.0.2",
          args: [`--outbound=127.0.0.1:${outboundPort}`],
        }),
      );

      const started = Date.now();
      const failures: string[] = [];
      let requests = 0;
      let late: Promise<void> | undefined;
      while (Date.now() - started < LOAD_MS) {
        const t = Date.now() - started;
        if (t >= LATE_PROXY_AT_MS && !late) {
          // A new proxy, given the roots meshd serves now (the original root has expired by now).
          late = (async () => {
            const lateDir = join(dir, "late");
            await Deno.mkdir(lateDir);
            await Deno.writeTextFile(join(lateDir, "root-cert.pem"), await trustBundle());
            const latePort = freePort();
            procs.push(
              await startProxyProcess({
                ...common,
                dir: lateDir,
                serviceAccount: "late",
                workloadEntry: "late-1",
                address: "127.0.0.3",
                args: [`--outbound=127.0.0.1:${latePort}`],
              }),
            );
            const through = await get(latePort, undefined, "/status/200");
            assert.equal(through, 200, "the late proxy reaches httpbin");
          })();
        }
        requests++;
        // Every 10th request on a new connection; the rest on one keep-alive connection.
        const status = await get(outboundPort, requests % 10 === 0 ? undefined : agent, `/get?n=${requests}`);
        if (status !== 200) failures.push(`${(t / 1000).toFixed(1)} s: ${status}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      await late;

      const log = meshd.output();
      figure(
        `cert rotation: ${requests} requests, ${failures.length} failed; meshd: ${
          count(log, /rotated the self-signed root/g)
        } root rotations, ${count(log, /left the trust bundle/g)} roots pruned, ${
          count(log, /renewed meshd's serving certificate/g)
        } serving renewals, ${count(log, /issued spiffe:/g)} workload certificates`,
      );
      assert.deepEqual(failures, [], `failed requests out of ${requests}`);
      assert.ok(requests > 600, `${requests} requests`);
      assert.ok(count(log, /rotated the self-signed root/g) >= 2, log.slice(-3000));
      assert.ok(count(log, /left the trust bundle/g) >= 1, "an expired root was pruned while meshd ran");
      assert.ok(
        count(log, /renewed meshd's serving certificate/g) >= 8,
        "renewed every ~30 s and on rotations",
      );
      assert.equal(
        count(log, /\terror\t/g),
        0,
        log.split("\n").filter((l) => l.includes("\terror\t")).join("\n"),
      );
      // Each proxy renewed its 60 s certificate every ~30 s.
      assert.ok(count(procs[1].stderr(), /workload certificate spiffe:\/\/\S+ valid until/g) >= 8);
      // The bundle meshd serves holds valid roots only: the original one and later expired ones left it.
      const bundle = pemCertificates(await trustBundle()).map((b) => new X509Certificate(b.der));
      assert.ok(bundle.length >= 1 && bundle.length <= 2, `${bundle.length} roots`);
      for (const c of bundle) {
        assert.ok(Date.parse(c.validTo) > Date.now(), `expired root ${c.validTo} in the bundle`);
      }
      const original = new X509Certificate(originalRoot).fingerprint256;
      assert.ok(!bundle.some((c) => c.fingerprint256 === original), "the original root left");
      const metrics = await (await fetch(`http://127.0.0.1:${monitoringPort}/metrics`)).text();
      const left = Number(/^ca_server_root_cert_expiry_seconds (\S+)$/m.exec(metrics)?.[1]);
      assert.ok(left > 60 && left <= 180, `ca_server_root_cert_expiry_seconds ${left}`);
    } catch (e) {
      console.error(meshd.output().slice(-4000));
      for (const p of procs) console.error(p.stderr().slice(-2000));
      throw e;
    } finally {
      agent.destroy();
      for (const p of procs) await p.stop();
      await app.stop();
      await meshd.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
}));
