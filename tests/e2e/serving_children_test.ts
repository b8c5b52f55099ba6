/**
 * meshd survives any client (issue 12, denoland/deno#36788): gRPC is served by child processes behind
 * meshd's byte relay (meshd/server/serving). Killing or aborting a serving child under connected
 * proxies must not fail a data-path request, the proxies' ADS streams must be back within 1 s, and
 * meshd must start a replacement. A hostile client that closes with GOAWAYs by hand (python3-h2,
 * tests/bench/hostile_goaway.py) must not take meshd down. The heavy versions are in tests/bench
 * (goaway_stress.ts, hostile_goaway.py).
 *
 * @module
 */
import assert from "node:assert/strict";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { AdsClient } from "../../proxy/agent/ads_client.ts";
import { SERVICE, waitFor } from "../integration/meshd_support.ts";
import { eventually, gatewayMeshServices, startGatewayMesh, startMeshdProcess } from "./e2e_support.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { figure } from "../../shared/internal/testing/figures.ts";
import { processDeadline } from "../../shared/internal/testing/deadline.ts";

const HTTPBIN_IP = "127.0.0.2";
const GATEWAY_IP = "127.0.0.4";
const GATEWAY_TARGET_PORT = freePort();

const GATEWAY = `apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: httpbin-gateway, namespace: foo}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["httpbin.example.com"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: ["httpbin.example.com"]
  gateways: [httpbin-gateway]
  http:
  - match: [{uri: {prefix: /status}}]
    route:
    - destination: {port: {number: 8000}, host: httpbin}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
`;

/** One HTTP/1.1 request on a new connection through the gateway: the status code, or the error. */
async function viaGateway(): Promise<string> {
  let conn: Deno.TcpConn | undefined;
  try {
    conn = await Deno.connect({ hostname: GATEWAY_IP, port: GATEWAY_TARGET_PORT });
    await conn.write(
      new TextEncoder().encode(
        "GET /status/200 HTTP/1.1\r\nHost: httpbin.example.com\r\nConnection: close\r\n\r\n",
      ),
    );
    const buf = new Uint8Array(256);
    let head = "";
    const deadline = setTimeout(() => conn?.close(), 3000);
    while (!head.includes("\r\n")) {
      const n = await conn.read(buf);
      if (n === null) break;
      head += new TextDecoder().decode(buf.subarray(0, n));
    }
    clearTimeout(deadline);
    return head.split(" ")[1] ?? `no response (${JSON.stringify(head)})`;
  } catch (e) {
    return (e as Error).message;
  } finally {
    try {
      conn?.close();
    } catch {
      // Closed by the deadline.
    }
  }
}

Deno.test(requires(httpbinMissing(), {
  name:
    "e2e: serving children killed or aborted under a gateway and a sidecar: 0 failed requests, ADS back in 1 s",
  async fn() {
    const mesh = await startGatewayMesh(
      {
        "services.yaml": gatewayMeshServices({ httpbin: HTTPBIN_IP, gateway: GATEWAY_IP }, [{
          name: "http",
          number: 80,
          protocol: "HTTP",
          targetPort: GATEWAY_TARGET_PORT,
        }]),
        "gateway.yaml": GATEWAY,
      },
      { httpbin: HTTPBIN_IP, gateway: GATEWAY_IP },
      { servingChildren: 2 },
    );
    const { server } = mesh.meshd;
    let loading = true;
    const results = new Map<string, number>();
    try {
      await eventually("200 through the gateway", async () => {
        const s = await viaGateway();
        return s === "200" ? undefined : s;
      });
      await waitFor(() => server.ads.connected === 2, 10_000, "both proxies' ADS streams");
      const load = (async () => {
        while (loading) {
          const s = await viaGateway();
          results.set(s, (results.get(s) ?? 0) + 1);
        }
      })();
      for (const signal of ["SIGKILL", "SIGABRT", "SIGKILL", "SIGABRT"] as const) {
        const victim = server.servingChildren.filter((c) => c.ready && c.connections > 0)
          .sort((a, b) => b.calls - a.calls)[0];
        assert.ok(victim, `a child that serves a proxy: ${JSON.stringify(server.servingChildren)}`);
        const before = new Set(server.ads.streams().map((s) => s.id));
        const killedAt = performance.now();
        Deno.kill(victim.pid, signal);
        // Back: as many streams as before, and the killed child's streams replaced by new ones.
        await waitFor(
          () => {
            const now = server.ads.streams().map((s) => s.id);
            return now.length === 2 && now.some((id) => !before.has(id));
          },
          5_000,
          `the ADS streams after ${signal} to child ${victim.pid}`,
        );
        const backMs = performance.now() - killedAt;
        figure(`${signal} to serving child ${victim.pid}: ADS streams back in ${backMs.toFixed(0)} ms`);
        assert.ok(backMs < 1000, `ADS back after ${backMs.toFixed(0)} ms (${signal})`);
        await waitFor(
          () => server.servingChildren.filter((c) => c.ready).length === 2,
          10_000,
          "a replacement child",
        );
        await new Promise((r) => setTimeout(r, 300));
      }
      loading = false;
      await load;
      const ok = results.get("200") ?? 0;
      assert.ok(ok > 20, `requests served during the kills: ${JSON.stringify([...results])}`);
      assert.deepEqual([...results.keys()], ["200"], `failed requests: ${JSON.stringify([...results])}`);
    } catch (e) {
      mesh.dumpLogs();
      throw e;
    } finally {
      loading = false;
      await mesh.stop();
    }
  },
}));

for (
  const [transport, args] of [
    ["serving children", ["--grpcTransport", "children", "--servingChildren", "2"]],
    ["the own HTTP/2 codec", ["--grpcTransport", "codec"]],
  ] as const
) {
  Deno.test({
    name:
      `meshd (a real process, ${transport}) survives 400 hostile GOAWAY closes, then serves a proxy and stops in time`,
    fn: () => hostileClosesThenServe([...args]),
  });
}

async function hostileClosesThenServe(args: string[]): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "serving-children-" });
  await Deno.mkdir(`${dir}/config`);
  await Deno.writeTextFile(`${dir}/config/service.yaml`, SERVICE);
  const port = freePort();
  const meshd = await startMeshdProcess(dir, port, args);
  let exited: Deno.CommandStatus | undefined;
  meshd.child.status.then((s) => (exited = s));
  try {
    // Two hostile clients at once: concurrency is what made the in-process server abort.
    const deadline = processDeadline(120_000, "two hostile_goaway.py clients");
    const hostile = () =>
      new Deno.Command("/usr/bin/python3", {
        args: [
          new URL("../bench/hostile_goaway.py", import.meta.url).pathname,
          "127.0.0.1",
          `${port}`,
          "200",
        ],
        stdout: "piped",
        stderr: "piped",
        signal: deadline.signal,
      }).output();
    const runs = await Promise.all([hostile(), hostile()]);
    deadline.end();
    for (const r of runs) {
      assert.ok(r.success, new TextDecoder().decode(r.stderr));
      const counts = JSON.parse(new TextDecoder().decode(r.stdout)) as Record<string, { served: number }>;
      const served = Object.values(counts).reduce((n, c) => n + c.served, 0);
      assert.ok(
        served > 0,
        `meshd answered none of the hostile client's streams: ${JSON.stringify(counts)}`,
      );
    }
    assert.equal(exited, undefined, `meshd died:\n${meshd.output().slice(-3000)}`);
    // Still serving: a proxy's agent gets its config.
    let acks = 0;
    const ads = new AdsClient({
      address: `127.0.0.1:${port}`,
      node: { ip: "10.1.0.1", name: "httpbin-1", namespace: "foo" },
      plaintext: true,
      hooks: { onAck: () => acks++ },
    });
    ads.start();
    await waitFor(() => acks > 0, 10_000, "a proxy's first ACK after the hostile clients");
    // Not `exiting`: the test process goes on, so the client closes its grpc-js channel (and its timers).
    await ads.stop();
    // --shutdownDuration (default 10 s) bounds the stop; with nothing in flight it is immediate.
    const stopAt = performance.now();
    meshd.child.kill("SIGTERM");
    const status = await meshd.child.status;
    assert.equal(status.code, 0, meshd.output().slice(-2000));
    assert.ok(performance.now() - stopAt < 5000, "meshd took too long to stop");
    const deaths = (meshd.output().match(/serving child \d+ died/g) ?? []).length;
    figure(
      `hostile GOAWAY (${
        args.join(" ")
      }): 400 closes, meshd alive, ${deaths} serving children died and were replaced`,
    );
  } finally {
    await meshd.stop();
    await Deno.remove(dir, { recursive: true });
  }
}
