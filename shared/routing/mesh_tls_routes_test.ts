import assert from "node:assert/strict";
import type { VirtualServiceSpec } from "../api/types.gen.ts";
import { meshTlsRouteConfigurations, type MeshTlsService } from "./mesh_tls_routes.ts";
import type { NamedSpec } from "./route_configuration.ts";

const SLEEP = { namespace: "default", labels: { app: "sleep" } };
const CNN: MeshTlsService = {
  key: "default/cnn",
  hosts: ["edition.cnn.com"],
  ports: [{ number: 80, protocol: "HTTP" }, { number: 443, protocol: "TLS" }],
};
const vs = (spec: VirtualServiceSpec, name = "direct-cnn"): NamedSpec<VirtualServiceSpec> => ({
  namespace: "default",
  name,
  spec,
});
const toEgress = (match: Record<string, unknown>) => ({
  match: [{ sniHosts: ["edition.cnn.com"], ...match }],
  route: [{
    destination: { host: "istio-egressgateway.istio-system.svc.cluster.local", port: { number: 443 } },
  }],
});

Deno.test("mesh tls routes: Istio's egress-gateway HTTPS task routes edition.cnn.com:443 to the egress gateway", () => {
  // The task's VirtualService (trimmed to its mesh rule): gateways [istio-egressgateway, mesh].
  const rcs = meshTlsRouteConfigurations(SLEEP, [
    vs({
      hosts: ["edition.cnn.com"],
      gateways: ["istio-egressgateway", "mesh"],
      tls: [toEgress({ port: 443, gateways: ["mesh"] }), {
        match: [{ sniHosts: ["edition.cnn.com"], port: 443, gateways: ["istio-egressgateway"] }],
        route: [{ destination: { host: "edition.cnn.com", port: { number: 443 } }, weight: 100 }],
      }],
    }),
  ], [CNN]);
  assert.equal(rcs.length, 1);
  assert.equal(rcs[0].name, "mesh.tls.443.default/cnn");
  assert.deepEqual(rcs[0].gateways, ["mesh"]);
  assert.equal(rcs[0].tls?.mode, "PASSTHROUGH");
  assert.deepEqual(rcs[0].tlsRoutes, [{
    name: "default/direct-cnn.tls.0",
    sniHosts: ["edition.cnn.com"],
    destinations: [{ host: "istio-egressgateway.istio-system.svc.cluster.local", port: 443, weight: 100 }],
  }]);
});

const CASES: { name: string; spec: VirtualServiceSpec; routes: number }[] = [
  {
    name: "no gateways (mesh by default)",
    spec: { hosts: ["edition.cnn.com"], tls: [toEgress({})] },
    routes: 1,
  },
  {
    name: "bound to a gateway only",
    spec: { hosts: ["edition.cnn.com"], gateways: ["gw"], tls: [toEgress({})] },
    routes: 0,
  },
  {
    name: "a match for a gateway only",
    spec: { hosts: ["edition.cnn.com"], tls: [toEgress({ gateways: ["gw"] })] },
    routes: 0,
  },
  { name: "another port", spec: { hosts: ["edition.cnn.com"], tls: [toEgress({ port: 8443 })] }, routes: 0 },
  {
    name: "sourceLabels of the workload",
    spec: { hosts: ["edition.cnn.com"], tls: [toEgress({ sourceLabels: { app: "sleep" } })] },
    routes: 1,
  },
  {
    name: "sourceLabels of another workload",
    spec: { hosts: ["edition.cnn.com"], tls: [toEgress({ sourceLabels: { app: "other" } })] },
    routes: 0,
  },
  {
    name: "another sourceNamespace",
    spec: { hosts: ["edition.cnn.com"], tls: [toEgress({ sourceNamespace: "other" })] },
    routes: 0,
  },
  {
    name: "destinationSubnets (never matches at a sidecar)",
    spec: { hosts: ["edition.cnn.com"], tls: [toEgress({ destinationSubnets: ["10.0.0.0/8"] })] },
    routes: 0,
  },
  { name: "hosts of another service", spec: { hosts: ["other.example"], tls: [toEgress({})] }, routes: 0 },
  { name: "a wildcard host covering it", spec: { hosts: ["*.cnn.com"], tls: [toEgress({})] }, routes: 1 },
  {
    name: "two rules with the same SNI: the second is never reached",
    spec: { hosts: ["edition.cnn.com"], tls: [toEgress({}), toEgress({})] },
    routes: 1,
  },
];

for (const c of CASES) {
  Deno.test(`mesh tls routes: ${c.name}`, () => {
    const skipped: string[] = [];
    const rcs = meshTlsRouteConfigurations(SLEEP, [vs(c.spec)], [CNN], {
      onSkipRoute: (s) => skipped.push(s.reason),
    });
    assert.equal(rcs.flatMap((rc) => rc.tlsRoutes ?? []).length, c.routes);
    if (c.name.startsWith("destinationSubnets")) assert.match(skipped.join(), /destinationSubnets/);
  });
}

Deno.test("mesh tls routes: a subset destination is reported and not used; HTTP ports are never TLS-routed", () => {
  const skipped: string[] = [];
  const rcs = meshTlsRouteConfigurations(
    SLEEP,
    [
      vs({
        hosts: ["edition.cnn.com"],
        tls: [{
          match: [{ sniHosts: ["edition.cnn.com"] }],
          route: [{ destination: { host: "edition.cnn.com", subset: "v1", port: { number: 443 } } }],
        }],
      }),
    ],
    [CNN],
    { onSkipRoute: (s) => skipped.push(`${s.virtualService} ${s.rule}: ${s.reason}`) },
  );
  assert.deepEqual(rcs, []);
  assert.equal(skipped.length, 1);
  assert.match(
    skipped[0],
    /^default\/direct-cnn 0: destination edition.cnn.com subset v1 needs a DestinationRule/,
  );
  const any = meshTlsRouteConfigurations(SLEEP, [vs({ hosts: ["edition.cnn.com"], tls: [toEgress({})] })], [
    CNN,
  ]);
  assert.deepEqual(any.map((rc) => rc.port), [443], "port 80 (HTTP) gets none");
});
