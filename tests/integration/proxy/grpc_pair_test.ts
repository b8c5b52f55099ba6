/**
 * gRPC through two real `proxy` programs (subprocesses with the task's permissions, two workers each)
 * configured by an in-process meshd with its CA: a ServiceEntry whose port is `GRPC`, a STRICT
 * PeerAuthentication, and Debian's python3-grpcio client and server. The client's calls reach the
 * server over HTTP/2 inside mutual TLS; then an AuthorizationPolicy written to meshd's config
 * directory turns one method into PERMISSION_DENIED.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startCa, startMeshd } from "../meshd_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { type ProxyProcess, startProxyProcess } from "../../../proxy/test_support.ts";
import { grpcClient, grpcioMissing, startGrpcServer } from "../../../proxy/h2proxy/h2_apps_test_support.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";

const AUTHORITY = "echo.foo.svc.cluster.local:9000";

function config(inboundPort: number): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo, namespace: foo}
spec:
  hosts: [echo.foo.svc.cluster.local]
  ports: [{name: grpc, number: 9000, targetPort: ${inboundPort}, protocol: GRPC}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: echo}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: echo-1, namespace: foo}
spec: {address: 127.0.0.1, labels: {app: echo}, serviceAccount: echo}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: sleep-1, namespace: foo}
spec: {address: 127.0.0.2, labels: {app: sleep}, serviceAccount: sleep}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
`;
}

const DENY_UNARY = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-unary, namespace: foo}
spec:
  selector: {matchLabels: {app: echo}}
  action: DENY
  rules: [{to: [{operation: {paths: [/test.Echo/Unary]}}]}]
`;

Deno.test(requires(grpcioMissing(), {
  name: "gRPC through two real proxies configured by meshd: STRICT mTLS, HTTP/2, a DENY policy",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "grpc-pair-" });
    await Deno.mkdir(join(dir, "config"));
    const inboundPort = freePort();
    const outboundPort = freePort();
    await Deno.writeTextFile(join(dir, "config", "services.yaml"), config(inboundPort));
    const ca = await startCa(join(dir, "ca"));
    const meshd = await startMeshd(join(dir, "config"), { ca });
    await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
    const app = await startGrpcServer();
    const proxies: ProxyProcess[] = [];
    const common = {
      dir,
      ca,
      discoveryAddress: `127.0.0.1:${meshd.securePort}`,
      namespace: "foo",
      concurrency: 2,
    };
    try {
      proxies.push(
        await startProxyProcess({
          ...common,
          serviceAccount: "echo",
          workloadEntry: "echo-1",
          labels: "app=echo",
          address: "127.0.0.1",
          args: ["--inboundBindAddress=127.0.0.1", `--inbound=${inboundPort}=127.0.0.1:${app.port}`],
        }),
        await startProxyProcess({
          ...common,
          serviceAccount: "sleep",
          workloadEntry: "sleep-1",
          labels: "app=sleep",
          address: "127.0.0.2",
          args: [`--outbound=127.0.0.1:${outboundPort}`],
        }),
      );
      const call = (scenarios: string[]) => grpcClient(`127.0.0.1:${outboundPort}`, AUTHORITY, scenarios);
      // The echo workload becomes proxied (mutual TLS to it) once its proxy's stream reached meshd.
      await within(
        (async () => {
          while ((await call(["unary"])).unary.code !== "OK") await new Promise((r) => setTimeout(r, 200));
        })(),
        15_000,
        "a first successful call",
      );
      const r = await call(["unary", "server_stream", "client_stream", "bidi", "large"]);
      for (const [scenario, outcome] of Object.entries(r)) assert.equal(outcome.code, "OK", scenario);
      assert.deepEqual(r.large, { code: "OK", bytes: 4194560, same: true });

      await Deno.writeTextFile(join(dir, "config", "deny.yaml"), DENY_UNARY);
      await within(
        (async () => {
          while ((await call(["unary"])).unary.code === "OK") await new Promise((r) => setTimeout(r, 200));
        })(),
        15_000,
        "the DENY policy in force",
      );
      const denied = await call(["unary", "server_stream"]);
      assert.deepEqual(denied.unary, { code: "PERMISSION_DENIED", details: "RBAC: access denied" });
      assert.equal(denied.server_stream.code, "OK");
    } finally {
      for (const p of proxies) await p.stop();
      await app.stop();
      await meshd.stop();
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
