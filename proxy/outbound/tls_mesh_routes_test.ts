/**
 * VirtualService `tls` rules bound to mesh at a sidecar, with real parts (./tls_passthrough_test_support.ts):
 * the route configurations come from shared's meshTlsRouteConfigurations (what meshd pushes), and real
 * curl's ClientHello is redirected by its SNI to another service (mutual TLS to a proxied endpoint, seen
 * by the peer sidecar), while an SNI that no rule names keeps its default destination.
 */
import assert from "node:assert/strict";
import type net from "node:net";
import { curl } from "../inbound/test_support.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { meshTlsRouteConfigurations } from "../../shared/routing/mod.ts";
import type { TlsPassthrough } from "./tls_passthrough.ts";
import {
  CLIENT_ID,
  curlTls,
  endpoint,
  service,
  withSidecar,
  withWorld,
} from "./tls_passthrough_test_support.ts";

/** Two rules bound to mesh: nginx.example.com (no address, port 443) and plain.foo (a VIP, 8443) go to `secure`. */
function withMeshRoutes(snapshot: RuntimeSnapshot, appPort: number): RuntimeSnapshot {
  const services = {
    ...snapshot.services,
    // The default of nginx.example.com: an external host, plain TCP to the app.
    "foo/ext": service("ext", ["nginx.example.com"], [[443, "TLS"]], [endpoint(appPort, 443, false)]),
  };
  const toSecure = { destination: { host: "secure.foo.svc.cluster.local", port: { number: 443 } } };
  const routes = meshTlsRouteConfigurations(
    { namespace: "foo", labels: {} },
    [{
      namespace: "foo",
      name: "to-secure",
      spec: {
        hosts: ["nginx.example.com", "plain.foo.svc.cluster.local"],
        gateways: ["mesh"],
        tls: [
          { match: [{ sniHosts: ["nginx.example.com"], port: 443 }], route: [toSecure] },
          {
            match: [{ sniHosts: ["plain.foo.svc.cluster.local"], port: 8443, gateways: ["mesh"] }],
            route: [toSecure],
          },
        ],
      },
    }],
    Object.entries(services).map(([key, s]) => ({ key, hosts: s.hosts, ports: s.ports })),
  );
  assert.deepEqual(routes.map((r) => r.name), ["mesh.tls.443.foo/ext", "mesh.tls.8443.foo/plain"]);
  return { ...snapshot, services, routes: Object.fromEntries(routes.map((r) => [r.name, r])) };
}

Deno.test("mesh tls rules, captured to an external host's address: the SNI's rule wins, another SNI keeps its default", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    const appPort = Number(Object.values(snapshot.services["foo/plain"].endpoints[0].ports)[0]);
    const snap = withMeshRoutes(snapshot, appPort);
    const take = (pt: TlsPassthrough, raw: net.Socket, fallback: () => void) => {
      if (!pt.bySni(raw, { address: "192.0.2.1", port: 443 }, fallback)) fallback();
    };
    await withSidecar(() => snap, log, take, async (port, fallbacks) => {
      const r = await curlTls("nginx.example.com", port);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "hello");
      assert.deepEqual(seen, [CLIENT_ID], "redirected to `secure`: over mutual TLS to its peer sidecar");
      // No rule names api.wild.test: the ServiceEntry it names, plain TCP as without the rules.
      const other = await curlTls("api.wild.test", port);
      assert.equal(other.code, 0, other.stderr);
      assert.equal(other.stdout, "hello");
      assert.deepEqual(seen, [CLIENT_ID], "not redirected");
      assert.equal(fallbacks(), 0);
    });
    // Original destination unknown (no capture): the SNI's service and port, then its rules.
    seen.length = 0;
    await withSidecar(
      () => snap,
      log,
      (pt, raw, fallback) => pt.bySni(raw, undefined, fallback),
      async (port) => {
        assert.equal((await curlTls("nginx.example.com", port)).code, 0);
        assert.deepEqual(seen, [CLIENT_ID], "no capture: redirected to `secure` too");
      },
    );
    // Without the rules, nginx.example.com goes to its own (unproxied) endpoint.
    seen.length = 0;
    await withSidecar(() => ({ ...snap, routes: {} }), log, take, async (port) => {
      assert.equal((await curlTls("nginx.example.com", port)).code, 0);
      assert.deepEqual(seen, []);
    });
  });
});

Deno.test("mesh tls rules at a service address: the SNI's rule wins; an SNI no rule names is refused, as Istio's listener", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    const appPort = Number(Object.values(snapshot.services["foo/plain"].endpoints[0].ports)[0]);
    const snap = withMeshRoutes(snapshot, appPort);
    const plain = snap.services["foo/plain"];
    const target = {
      key: "foo/plain",
      service: plain,
      port: plain.ports[0],
      cluster: "outbound|8443||plain",
    };
    await withSidecar(() => snap, log, (pt, raw, fallback) => {
      if (!pt.service(raw, target)) fallback();
    }, async (port, fallbacks) => {
      const sni = "plain.foo.svc.cluster.local";
      const r = await curl(["-k", "--resolve", `${sni}:${port}:127.0.0.1`, `https://${sni}:${port}/`]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "hello");
      assert.deepEqual(seen, [CLIENT_ID], "redirected to `secure` over mutual TLS");
      const other = await curl(["-k", "--resolve", `x.foo:${port}:127.0.0.1`, `https://x.foo:${port}/`]);
      assert.equal(other.code, 35, other.stderr);
      assert.ok(log.entries.some((e) => /no TLS route for SNI "x.foo"/.test(String(e.fields?.reason))));
      assert.equal(fallbacks(), 0);
    });
  });
});
