/**
 * Inbound TCP through the real `proxy` program (a subprocess with the task's permissions, two
 * workers) configured by an in-process meshd with its CA: a ServiceEntry whose port is `TCP`, a
 * STRICT PeerAuthentication, a TCP echo application behind `--inbound`. A client with a mesh
 * workload certificate (signed by meshd's CA for foo/sleep) talks mutual TLS to the inbound port:
 * bytes and half-close pass, plain text is reset, Istio's TCP metrics appear on `/stats/prometheus`,
 * then an L4 DENY policy written to meshd's config directory closes the next connection with no
 * application byte.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import net from "node:net";
import tls from "node:tls";
import { startCa, startMeshd } from "../meshd_support.ts";
import { makeCsr } from "../../../meshd/ca/test_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { type ProxyProcess, startProxyProcess } from "../../../proxy/test_support.ts";
import { collect, type Received, TcpApp } from "../../../proxy/inbound/tcp_test_support.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { MESH_TCP_ALPN } from "../../../proxy/tls/mesh_alpn.ts";

function config(inboundPort: number): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: tcp-echo, namespace: foo}
spec:
  hosts: [tcp-echo.foo.svc.cluster.local]
  ports: [{name: tcp, number: 9000, targetPort: ${inboundPort}, protocol: TCP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: tcp-echo}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: tcp-echo-1, namespace: foo}
spec: {address: 127.0.0.1, labels: {app: tcp-echo}, serviceAccount: tcp-echo}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
`;
}

const DENY_SLEEP = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-sleep, namespace: foo}
spec:
  selector: {matchLabels: {app: tcp-echo}}
  action: DENY
  rules: [{from: [{source: {principals: [cluster.local/ns/foo/sa/sleep]}}]}]
`;

Deno.test("inbound TCP through a real proxy configured by meshd: STRICT mTLS, half-close, metrics, L4 DENY", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tcp-inbound-" });
  await Deno.mkdir(join(dir, "config"));
  const inboundPort = freePort();
  await Deno.writeTextFile(join(dir, "config", "services.yaml"), config(inboundPort));
  const ca = await startCa(join(dir, "ca"));
  const meshd = await startMeshd(join(dir, "config"), { ca });
  await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
  const app = await TcpApp.start();
  const csr = await makeCsr();
  const chain = await ca.sign({ csrPem: csr.csrPem, namespace: "foo", serviceAccount: "sleep" });
  let proxy: ProxyProcess | undefined;
  const talk = (text: string): Promise<Received> => {
    const s = tls.connect({
      socket: net.connect({ host: "127.0.0.1", port: inboundPort, allowHalfOpen: true }),
      // A mesh sidecar's TCP ALPN: without an Istio value a PERMISSIVE port passes TLS to the app.
      ALPNProtocols: [...MESH_TCP_ALPN],
      ca: ca.trustBundlePem,
      cert: chain.slice(0, -1).join("\n"),
      key: csr.privateKeyPem,
      checkServerIdentity: () => undefined,
    });
    const got = collect(s, true);
    s.end(text);
    return within(got, 10_000, "mTLS client");
  };
  try {
    proxy = await startProxyProcess({
      dir,
      ca,
      discoveryAddress: `127.0.0.1:${meshd.securePort}`,
      namespace: "foo",
      serviceAccount: "tcp-echo",
      workloadEntry: "tcp-echo-1",
      labels: "app=tcp-echo",
      address: "127.0.0.1",
      concurrency: 2,
      args: ["--inboundBindAddress=127.0.0.1", `--inbound=${inboundPort}=127.0.0.1:${app.port}`],
    });
    const admin = (path: string) =>
      fetch(`http://127.0.0.1:${proxy!.adminPort}${path}`).then((r) => r.text());
    const plainRefused = async (): Promise<boolean> => {
      const plain = net.connect({ host: "127.0.0.1", port: inboundPort });
      const got = collect(plain, true);
      plain.write("PING\r\n");
      return (await within(got, 5000, "plain client")).error === "ECONNRESET";
    };
    // meshd's STRICT mode and the TCP service port reach every worker with the first snapshot: wait
    // until the config dump shows the port as TCP and plain text is reset several times in a row
    // (the kernel spreads connections over both workers).
    await within(
      (async () => {
        let resets = 0;
        while (resets < 6) {
          const tcp = /"carried": *"TCP"/.test(await admin("/config_dump"));
          resets = tcp && await plainRefused() ? resets + 1 : 0;
          if (resets === 0) await new Promise((r) => setTimeout(r, 200));
        }
      })(),
      15_000,
      "STRICT and the TCP port in force",
    );
    const received = app.received;
    const r = await talk("hello");
    assert.match(
      r.text,
      /^hello\nsha256:[0-9a-f]{64}$/,
      "echoed, then the app's answer after the client's FIN",
    );
    assert.equal(app.received - received, 5, "the app got exactly the client's bytes");

    const prom = await admin("/stats/prometheus");
    assert.match(
      prom,
      /^istio_tcp_connections_opened_total\{reporter="destination",[^}]*source_principal="spiffe:\/\/cluster\.local\/ns\/foo\/sa\/sleep"[^}]*request_protocol="tcp"[^}]*\} 1$/m,
    );
    assert.match(prom, /^istio_tcp_received_bytes_total\{[^}]*\} 5$/m);

    await Deno.writeTextFile(join(dir, "config", "deny.yaml"), DENY_SLEEP);
    let denied: Received | undefined;
    await within(
      (async () => {
        while (true) {
          const before = app.accepted;
          const d = await talk("secret");
          if (d.bytes.length === 0 && app.accepted === before) {
            denied = d;
            return;
          }
          await new Promise((r) => setTimeout(r, 200));
        }
      })(),
      15_000,
      "the DENY policy in force",
    );
    assert.equal(denied!.bytes.length, 0, "no application byte");
    // A worker's log line reaches the proxy's stderr through the main isolate, after the close the
    // client saw: wait for it rather than read stderr at once.
    await within(
      (async () => {
        while (!/connection denied.*foo\/deny-sleep/.test(proxy!.stderr())) {
          await new Promise((r) => setTimeout(r, 50));
        }
      })(),
      5_000,
      "the denial logged with the policy name",
    );
  } finally {
    await proxy?.stop();
    await app.close();
    await meshd.stop();
    await ca.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
