/**
 * gRPC through two real `proxy` programs (subprocesses with the task's permissions, two workers each)
 * configured by an in-process meshd with its CA: a ServiceEntry whose port is `GRPC`, a STRICT
 * PeerAuthentication, and Debian's python3-grpcio client and server. The client's calls reach the
 * server over HTTP/2 inside mutual TLS; then an AuthorizationPolicy written to meshd's config
 * directory turns one method into PERMISSION_DENIED. Both proxies' `/stats/prometheus` count the calls
 * as Istio's stats plugin: `request_protocol="grpc"` with `grpc_response_status` 0 (OK) or 7 (the
 * denial), and an h2c request by curl that is not gRPC as `http` with an empty gRPC status.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startCa, startMeshd, strictPairConfig } from "../meshd_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { type ProxyProcess, startProxyProcess } from "../../../proxy/test_support.ts";
import { grpcClient, grpcioMissing, startGrpcServer } from "../../../proxy/h2proxy/h2_apps_test_support.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";

const AUTHORITY = "echo.foo.svc.cluster.local:9000";

const DENY_UNARY = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-unary, namespace: foo}
spec:
  selector: {matchLabels: {app: echo}}
  action: DENY
  rules: [{to: [{operation: {paths: [/test.Echo/Unary]}}]}]
`;

/** The sum of the samples of `metric` whose labels include `labels`. */
function sumOf(prom: string, metric: string, labels: Record<string, string>): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return prom.split("\n").filter((l) =>
    l.startsWith(`${metric}{`) &&
    want.every((w) => l.includes(`{${w},`) || l.includes(`,${w},`) || l.includes(`,${w}}`))
  ).reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

Deno.test(requires(grpcioMissing() ?? commandMissing("curl"), {
  name: "gRPC through two real proxies configured by meshd: STRICT mTLS, HTTP/2, a DENY policy",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "grpc-pair-" });
    await Deno.mkdir(join(dir, "config"));
    const inboundPort = freePort();
    const outboundPort = freePort();
    await Deno.writeTextFile(
      join(dir, "config", "services.yaml"),
      strictPairConfig("echo", [`{name: grpc, number: 9000, targetPort: ${inboundPort}, protocol: GRPC}`]),
    );
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

      // An h2c request that is not gRPC (no application/grpc content-type) to the same service.
      const h2c = new Deno.Command("curl", {
        args: [
          "-s",
          "-o",
          "/dev/null",
          "-w",
          "%{http_version}",
          "--http2-prior-knowledge",
          "-H",
          `host: ${AUTHORITY}`,
          `http://127.0.0.1:${outboundPort}/test.Echo/Unary`,
        ],
      });
      assert.equal(new TextDecoder().decode((await h2c.output()).stdout), "2");

      const [server, client] = await Promise.all(
        proxies.map(async (p) =>
          await (await fetch(`http://127.0.0.1:${p.adminPort}/stats/prometheus`)).text()
        ),
      );
      const echo = { destination_service: AUTHORITY.split(":")[0] };
      for (const [prom, reporter] of [[client, "source"], [server, "destination"]]) {
        const of = (labels: Record<string, string>) =>
          sumOf(prom, "istio_requests_total", { ...echo, reporter, ...labels });
        // At least the calls above (the waits for the first call and for the policy add more).
        assert.ok(
          of({ request_protocol: "grpc", grpc_response_status: "0" }) >= 7,
          `${reporter} OK calls:\n${prom}`,
        );
        assert.ok(
          of({ request_protocol: "grpc", grpc_response_status: "7" }) >= 1,
          `${reporter} denials:\n${prom}`,
        );
        assert.equal(
          of({ request_protocol: "grpc", grpc_response_status: "" }),
          0,
          `${reporter}: every gRPC call has a status`,
        );
        assert.equal(of({ request_protocol: "http" }), 1, `${reporter}: the h2c request only:\n${prom}`);
        assert.equal(of({ request_protocol: "http", grpc_response_status: "" }), 1);
        assert.equal(
          sumOf(prom, "istio_request_duration_milliseconds_count", {
            ...echo,
            reporter,
            request_protocol: "grpc",
          }),
          of({ request_protocol: "grpc" }),
        );
      }
    } finally {
      for (const p of proxies) await p.stop();
      await app.stop();
      await meshd.stop();
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
