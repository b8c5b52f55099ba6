/**
 * HTTP/2 (h2c with prior knowledge) on a gateway's plain-text HTTP server: routed by the gateway's
 * route configuration, and every stream passes the gateway's policies exactly as an HTTP/1.1
 * request does (the same filter: a DENY answered 403, X-Forwarded-For appended), with real curl and
 * python3-hypercorn behind it; HTTP/2 to a service port whose protocol is HTTP reaches it as HTTP/1.1.
 */
import assert from "node:assert/strict";
import type { RouteConfiguration } from "../../shared/routing/mod.ts";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { RecordingLog, snapshotOf } from "../inbound/test_support.ts";
import { appService } from "../http/limits_test_support.ts";
import type { RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import { h2cToolsMissing, run, startHypercorn } from "../h2proxy/h2_apps_test_support.ts";
import { OutboundListener } from "./listener.ts";

const HOST = "app.example.com";
const OLD = "old.example.com";

function withProtocol(s: ServiceInfo, protocol: string): ServiceInfo {
  return { ...s, ports: s.ports.map((p) => ({ ...p, protocol })) };
}

function gatewaySnapshot(appPort: number): RuntimeSnapshot {
  const rc: RouteConfiguration = {
    name: "http.8080",
    port: 80,
    bindPort: 8080,
    gateways: ["foo/gw"],
    virtualHosts: [{
      name: `${HOST}:80`,
      domains: [HOST],
      routes: [{
        name: "foo/app.0",
        matches: [],
        destinations: [{ host: "app.foo.svc.cluster.local", port: 80, weight: 100 }],
      }],
    }, {
      name: `${OLD}:80`,
      domains: [OLD],
      routes: [{
        name: "foo/old.0",
        matches: [],
        destinations: [{ host: "old.foo.svc.cluster.local", port: 80, weight: 100 }],
      }],
    }],
  };
  const base = snapshotOf("PERMISSIVE", undefined);
  return {
    ...base,
    workload: base.workload && { ...base.workload, namespace: "foo" },
    services: {
      // The same h2c application behind an HTTP2 port, and behind an HTTP (HTTP/1.1) one.
      "foo/app": withProtocol(appService(appPort)["foo/app"], "HTTP2"),
      "foo/old": { ...appService(appPort)["foo/app"], name: "old", hosts: ["old.foo.svc.cluster.local"] },
    },
    routes: { [rc.name]: rc },
    authorizations: {
      "foo/deny-admin": {
        name: "deny-admin",
        namespace: "foo",
        action: "DENY",
        rules: [{ to: [{ operation: { paths: ["/admin"] } }] }],
      },
    },
  };
}

Deno.test(requires(h2cToolsMissing(), {
  name: "gateway: h2c streams are routed and pass the gateway's policies as HTTP/1.1 requests do",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "h2gw-" });
    const app = await startHypercorn(dir);
    const snapshot = gatewaySnapshot(app.port);
    const gw = new OutboundListener({
      address: "127.0.0.1",
      port: 0,
      snapshot: () => snapshot,
      log: new RecordingLog(),
      routeNames: ["http.8080"],
    });
    await gw.start();
    const get = async (path: string, version: string) => {
      const r = await run("curl", [
        "-sS",
        "--path-as-is",
        version,
        "-H",
        `Host: ${HOST}`,
        "-w",
        "\n%{http_version} %{http_code}",
        `http://127.0.0.1:${gw.port}${path}`,
      ]);
      assert.equal(r.code, 0, r.stderr);
      const nl = r.stdout.lastIndexOf("\n");
      return { line: r.stdout.slice(nl + 1), body: r.stdout.slice(0, nl) };
    };
    try {
      for (const version of ["--http2-prior-knowledge", "--http1.1"]) {
        const v = version === "--http1.1" ? "1.1" : "2";
        const ok = await get("/x/../echo", version);
        assert.equal(ok.line, `${v} 200`, version);
        const seen = JSON.parse(ok.body);
        assert.equal(seen.path, "/echo", version);
        assert.equal(
          seen.headers["x-forwarded-for"],
          "127.0.0.1",
          `${version}: the gateway appends the peer`,
        );
        const denied = await get("/x/../admin", version);
        assert.deepEqual([denied.line, denied.body], [`${v} 403`, "RBAC: access denied"], version);
        const unknown = await run("curl", [
          "-sS",
          version,
          "-H",
          "Host: other.example.com",
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          `http://127.0.0.1:${gw.port}/`,
        ]);
        assert.equal(unknown.stdout, "404", version);
      }
      // HTTP/2 to a service port that speaks HTTP/1.1: the stream goes as HTTP/1.1 (../h2proxy/h1_upstream.ts).
      const old = await run("curl", [
        "-sS",
        "--http2-prior-knowledge",
        "-H",
        `Host: ${OLD}`,
        `http://127.0.0.1:${gw.port}/h2`,
      ]);
      const oldSeen = JSON.parse(old.stdout);
      assert.deepEqual([oldSeen.path, oldSeen.http_version], ["/h2", "1.1"], old.stdout);
      const oldH1 = await run("curl", [
        "-sS",
        "--http1.1",
        "-H",
        `Host: ${OLD}`,
        `http://127.0.0.1:${gw.port}/x`,
      ]);
      assert.equal(JSON.parse(oldH1.stdout).path, "/x");
    } finally {
      await gw.close();
      await app.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
