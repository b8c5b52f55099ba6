/**
 * The real `proxy` program as a subprocess (with the permissions of the `proxy` task) against an
 * in-process meshd with its CA, Debian's httpbin (or a small Deno app when httpbin is not installed)
 * behind --inbound, real curl, and the admin interface.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type Meshd, startCa, startMeshd, waitFor } from "../meshd_support.ts";
import { STRICT } from "../../../meshd/server/test_support.ts";
import { curl, Httpbin } from "../../../proxy/inbound/test_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { httpbinMissing, inCi } from "../../../shared/internal/testing/prerequisites.ts";
import { type ProxyProcess, startProxyProcess } from "../../../proxy/test_support.ts";
import type { CertificateAuthority } from "../../../meshd/ca/mod.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";

/**
 * The mesh config; the service's targetPort is the proxy's inbound port, so that the port is declared HTTP
 * (an undeclared port would pass a TLS client without Istio's ALPN, such as curl, to the app under PERMISSIVE).
 */
const config = (targetPort: number): string =>
  `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: [httpbin.foo.svc.cluster.local]
  ports: [{name: http, number: 8000, targetPort: ${targetPort}, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: 10.1.0.2, labels: {app: httpbin}, serviceAccount: httpbin}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-path, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  action: DENY
  rules: [{to: [{operation: {paths: [/deny]}}]}]
`;

interface App {
  port: number;
  stop(): Promise<void>;
}

async function startApp(): Promise<App> {
  const missing = httpbinMissing();
  if (missing === undefined) {
    const h = await Httpbin.start();
    return { port: h.port, stop: () => h.stop() };
  }
  // Outside CI an echo server stands in for httpbin; CI tests against the real one.
  if (inCi()) throw new Error(`CI=true and ${missing}: ./dev test installs it`);
  const s = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) => Response.json({ url: req.url, headers: Object.fromEntries(req.headers) }),
  );
  return { port: s.addr.port, stop: () => s.shutdown() };
}

/** A running proxy subprocess and everything around it. */
interface Env {
  dir: string;
  meshd: Meshd;
  ca: CertificateAuthority;
  app: App;
  inboundPort: number;
  adminPort: number;
  outboundPort: number;
  child: Deno.ChildProcess;
  stderr: () => string;
  admin(path: string, init?: RequestInit): Promise<{ status: number; text: string }>;
}

async function withProxy(concurrency: number, fn: (env: Env) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "proxy-e2e-" });
  await Deno.mkdir(join(dir, "config"));
  const inboundPort = freePort();
  await Deno.writeTextFile(join(dir, "config", "services.yaml"), config(inboundPort));
  const ca = await startCa(join(dir, "ca"));
  const meshd = await startMeshd(join(dir, "config"), { ca });
  await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
  const app = await startApp();
  const outboundPort = freePort();
  let proxy: ProxyProcess | undefined;
  try {
    proxy = await startProxyProcess({
      dir,
      ca,
      discoveryAddress: `127.0.0.1:${meshd.securePort}`,
      namespace: "foo",
      serviceAccount: "httpbin",
      workloadEntry: "httpbin-1",
      labels: "app=httpbin",
      address: "10.1.0.2",
      concurrency,
      args: [
        "--inboundBindAddress=127.0.0.1",
        `--inbound=${inboundPort}=127.0.0.1:${app.port}`,
        `--outbound=127.0.0.1:${outboundPort}`,
      ],
    });
    const adminPort = proxy.adminPort;
    const admin = async (path: string, init?: RequestInit) => {
      const r = await fetch(`http://127.0.0.1:${adminPort}${path}`, init);
      return { status: r.status, text: await r.text() };
    };
    await fn({
      dir,
      meshd,
      ca,
      app,
      inboundPort,
      adminPort,
      outboundPort,
      child: proxy.child,
      stderr: proxy.stderr,
      admin,
    });
  } finally {
    await proxy?.stop();
    await app.stop();
    await meshd.stop();
    await ca.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

/** The value of the one sample of `metric` whose labels include `labels`. */
function sampleOf(prom: string, metric: string, labels: Record<string, string>): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const lines = prom.split("\n").filter((l) =>
    l.startsWith(`${metric}{`) &&
    want.every((w) => l.includes(`{${w},`) || l.includes(`,${w},`) || l.includes(`,${w}}`))
  );
  assert.equal(lines.length, 1, `one ${metric} ${want.join(",")} in:\n${prom}`);
  return Number(lines[0].slice(lines[0].lastIndexOf(" ") + 1));
}

function statOf(stats: string, name: string): number {
  const line = stats.split("\n").find((l) => l.startsWith(`${name}: `));
  assert.ok(line, `stat ${name} in:\n${stats}`);
  return Number(line.slice(name.length + 2));
}

Deno.test({
  name: "proxy: plain text under PERMISSIVE, then STRICT resets it; admin dump, stats, logging, quitquitquit",
  fn: () =>
    withProxy(2, async (env) => {
      const url = `http://127.0.0.1:${env.inboundPort}/get`;
      const ok = await curl(["-o", "/dev/null", "-w", "%{http_code}", url]);
      assert.equal(ok.stdout, "200", ok.stderr);

      // /config_dump: every type, versions, the chain but no private key.
      const dump = await env.admin("/config_dump");
      assert.equal(dump.status, 200);
      assert.ok(!/PRIVATE KEY/.test(dump.text), "no private key in /config_dump");
      const configs = JSON.parse(dump.text).configs as Record<string, unknown>[];
      const byType = Object.fromEntries(configs.map((c) => [String(c["@type"]).split(".").pop(), c]));
      for (
        const t of [
          "BootstrapConfigDump",
          "ListenersConfigDump",
          "ClustersConfigDump",
          "EndpointsConfigDump",
          "RoutesConfigDump",
          "SecretsConfigDump",
          "MeshConfigDump",
        ]
      ) assert.ok(byType[t], `${t} in /config_dump`);
      // deno-lint-ignore no-explicit-any
      const listeners = byType.ListenersConfigDump as any;
      assert.notEqual(listeners.version_info, "");
      assert.equal(
        listeners.dynamic_listeners[0].active_state.listener.address.socket_address.port_value,
        env.inboundPort,
      );
      assert.equal(listeners.dynamic_listeners[0].active_state.listener.mtls.mode, "PERMISSIVE");
      // deno-lint-ignore no-explicit-any
      const secrets = (byType.SecretsConfigDump as any).dynamic_active_secrets;
      assert.match(secrets[0].secret.tls_certificate.certificate_chain.inline_string, /BEGIN CERTIFICATE/);
      assert.equal(secrets[0].secret.tls_certificate.private_key.inline_string, "[redacted]");
      assert.equal(secrets[0].spiffe_id, "spiffe://cluster.local/ns/foo/sa/httpbin");
      // deno-lint-ignore no-explicit-any
      const clusters = (byType.ClustersConfigDump as any).dynamic_active_clusters;
      assert.ok(clusters.some((c: { cluster: { name: string } }) =>
        c.cluster.name === "outbound|8000||httpbin.foo.svc.cluster.local"
      ));

      // Both workers accept: 30 new connections spread by the kernel.
      for (let i = 0; i < 29; i++) {
        const r = await curl(["-o", "/dev/null", "-w", "%{http_code}", url]);
        assert.equal(r.stdout, "200");
      }
      const stats = (await env.admin("/stats")).text;
      const l = `listener.127.0.0.1_${env.inboundPort}`;
      const w0 = statOf(stats, `${l}.worker_0.downstream_cx_total`);
      const w1 = statOf(stats, `${l}.worker_1.downstream_cx_total`);
      assert.equal(w0 + w1, 30);
      assert.ok(w0 > 0 && w1 > 0, `both workers accepted: ${w0}, ${w1}`);
      assert.equal(statOf(stats, `${l}.downstream_cx_plaintext_total`), 30);
      assert.equal(statOf(stats, `${l}.downstream_rq_2xx`), 30);
      assert.equal(statOf(stats, `${l}.downstream_cx_mtls_total`), 0);
      assert.equal(statOf(stats, "server.concurrency"), 2);
      assert.equal(statOf(stats, "control_plane.connected_state"), 1);
      assert.ok(statOf(stats, `cluster.inbound|${env.inboundPort}||.upstream_cx_total`) >= 1);
      const prom = (await env.admin("/stats/prometheus")).text;
      assert.match(prom, /# TYPE envoy_listener_downstream_cx_total counter/);
      assert.match(
        prom,
        new RegExp(
          `envoy_listener_downstream_rq_2xx\\{envoy_listener_address="127.0.0.1_${env.inboundPort}"\\} 30`,
        ),
      );

      // Mutual TLS with a workload certificate of the mesh: served, counted.
      const key = join(env.dir, "client.key");
      const csr = join(env.dir, "client.csr");
      const gen = await new Deno.Command("openssl", {
        args: [
          "req",
          "-new",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:P-256",
          "-nodes",
          "-subj",
          "/",
          "-keyout",
          key,
          "-out",
          csr,
        ],
        stdout: "null",
        stderr: "null",
      }).output();
      assert.ok(gen.success);
      const chain = await env.ca.sign({
        csrPem: await Deno.readTextFile(csr),
        namespace: "foo",
        serviceAccount: "sleep",
      });
      await Deno.writeTextFile(join(env.dir, "client.pem"), chain.slice(0, -1).join(""));
      const mtls = await curl([
        "-k",
        "--cert",
        join(env.dir, "client.pem"),
        "--key",
        key,
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        `https://127.0.0.1:${env.inboundPort}/get`,
      ]);
      assert.equal(mtls.stdout, "200", mtls.stderr);
      const stats2 = (await env.admin("/stats")).text;
      assert.equal(statOf(stats2, `${l}.downstream_cx_mtls_total`), 1);
      assert.equal(statOf(stats2, `${l}.ssl.handshake`), 1);

      // Istio's standard metrics, summed over both workers: 30 plain-text 200s, the mTLS one, a DENY's 403.
      const denied = await curl([
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        `http://127.0.0.1:${env.inboundPort}/deny`,
      ]);
      assert.equal(denied.stdout, "403", denied.stderr);
      const istio = (await env.admin("/stats/prometheus")).text;
      const dest = {
        reporter: "destination",
        destination_workload_namespace: "foo",
        destination_service: "httpbin.foo.svc.cluster.local",
        request_protocol: "http",
        response_flags: "-",
      };
      const plain = { ...dest, source_principal: "unknown", connection_security_policy: "none" };
      assert.equal(sampleOf(istio, "istio_requests_total", { ...plain, response_code: "200" }), 30);
      assert.equal(sampleOf(istio, "istio_requests_total", { ...plain, response_code: "403" }), 1);
      const sleep = {
        ...dest,
        source_principal: "spiffe://cluster.local/ns/foo/sa/sleep",
        source_workload_namespace: "foo",
        destination_principal: "spiffe://cluster.local/ns/foo/sa/httpbin",
        connection_security_policy: "mutual_tls",
        response_code: "200",
      };
      assert.equal(sampleOf(istio, "istio_requests_total", sleep), 1);
      assert.match(istio, /^# TYPE istio_request_duration_milliseconds histogram$/m);
      const ok200 = { ...plain, response_code: "200" };
      assert.equal(
        sampleOf(istio, "istio_request_duration_milliseconds_bucket", { ...ok200, le: "+Inf" }),
        30,
      );
      assert.equal(sampleOf(istio, "istio_request_duration_milliseconds_count", ok200), 30);
      assert.ok(sampleOf(istio, "istio_request_duration_milliseconds_sum", ok200) > 0);

      // The outbound listener is served by the workers: an unknown host is the proxy's own 404.
      const out = await curl([
        "-x",
        `http://127.0.0.1:${env.outboundPort}`,
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "http://nohost.example/",
      ]);
      assert.equal(out.stdout, "404", out.stderr);
      const stats4 = (await env.admin("/stats")).text;
      assert.equal(statOf(stats4, `listener.127.0.0.1_${env.outboundPort}.no_route`), 1);
      const unrouted = { reporter: "source", destination_service: "unknown", response_code: "404" };
      const prom4 = (await env.admin("/stats/prometheus")).text;
      assert.equal(sampleOf(prom4, "istio_requests_total", unrouted), 1);

      // /logging: a level changes in the main thread and in the workers.
      assert.equal((await env.admin("/logging?inbound=debug")).status, 405);
      const set = await env.admin("/logging?inbound=debug", { method: "POST" });
      assert.equal(set.status, 200);
      assert.match(set.text, /^ {2}inbound: debug$/m);
      assert.match(set.text, /^ {2}agent: info$/m);
      const bad = await env.admin("/logging?inbound=loud", { method: "POST" });
      assert.equal(bad.status, 400);

      // STRICT: plain text gets a TCP reset (000, exit 56) within a couple of seconds.
      await Deno.writeTextFile(join(env.dir, "config", "strict.yaml"), STRICT);
      let last = { code: 0, stdout: "" };
      const took = await (async () => {
        const start = Date.now();
        while (Date.now() - start < 3000) {
          last = await curl(["-o", "/dev/null", "-w", "%{http_code}", url]);
          if (last.code === 56) {
            return Date.now() - start;
          }
          await new Promise((r) =>
            setTimeout(r, 50)
          );
        }
        throw new Error(`plain text still served 3 s after STRICT: ${JSON.stringify(last)}`);
      })();
      assert.equal(last.stdout, "000");
      assert.ok(took < 3000);
      const dump2 = JSON.parse((await env.admin("/config_dump")).text);
      assert.equal(dump2.configs[1].dynamic_listeners[0].active_state.listener.mtls.mode, "STRICT");
      assert.equal(dump2.configs[1].dynamic_listeners[0].active_state.listener.mtls.policy, "foo/default");
      const stats3 = (await env.admin("/stats")).text;
      assert.ok(statOf(stats3, `${l}.downstream_cx_refused_plaintext_in_strict`) >= 1);
      // The debug line of the refusal comes from a worker: the level reached it.
      await waitFor(
        () => /inbound\/worker_\d\tplain text refused on a STRICT port/.test(env.stderr()),
        2000,
        "debug line",
      );

      // /quitquitquit: answered, then the process exits 0.
      assert.equal((await env.admin("/quitquitquit")).status, 405);
      const quit = await env.admin("/quitquitquit", { method: "POST" });
      assert.equal(quit.status, 200);
      const status = await within(env.child.status, 5000, "the proxy's exit after /quitquitquit");
      assert.equal(status.code, 0, env.stderr());
    }),
});
