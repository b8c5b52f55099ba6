import assert from "node:assert/strict";
import { decodeResource, RESOURCE_TYPES } from "../../shared/mod.ts";
import { buildPushContext } from "../push_context/push_context.ts";
import { configResource as res } from "../push_context/test_support.ts";
import { PushContextGenerator, TYPE_URLS } from "./generators.ts";

Deno.test("route configurations: a sidecar gets the VirtualService tls rules bound to mesh (Istio's egress HTTPS task)", () => {
  const config = [
    res("WorkloadEntry", "default", "sleep-1", { address: "10.1.0.3", labels: { app: "sleep" } }),
    res("ServiceEntry", "default", "cnn", {
      hosts: ["edition.cnn.com"],
      ports: [{ name: "tls", number: 443, protocol: "TLS" }],
      resolution: "DNS",
    }),
    res("VirtualService", "default", "direct-cnn", {
      hosts: ["edition.cnn.com"],
      gateways: ["istio-egressgateway", "mesh"],
      tls: [{
        match: [{ gateways: ["mesh"], port: 443, sniHosts: ["edition.cnn.com"] }],
        route: [{
          destination: { host: "istio-egressgateway.istio-system.svc.cluster.local", port: { number: 443 } },
        }],
      }],
    }),
  ];
  const gen = new PushContextGenerator(buildPushContext(config, { version: "1" }));
  const sleep = {
    id: "sidecar~10.1.0.3~sleep-1.default~default.svc.cluster.local",
    cluster: "",
    metadata: {},
  };
  const list = gen.generate(sleep, TYPE_URLS.routeConfiguration)!;
  assert.deepEqual(list.resources.map((r) => r.name), ["mesh.tls.443.default/cnn"]);
  const rc = decodeResource(RESOURCE_TYPES.routeConfiguration, list.resources[0].body);
  assert.deepEqual(rc.tlsRoutes, [{
    name: "default/direct-cnn.tls.0",
    sniHosts: ["edition.cnn.com"],
    destinations: [{ host: "istio-egressgateway.istio-system.svc.cluster.local", port: 443, weight: 100 }],
  }]);
  // A gateway proxy that no Gateway selects gets none of them.
  const router = { ...sleep, id: "router~10.1.0.3~sleep-1.default~default.svc.cluster.local" };
  assert.deepEqual(gen.generate(router, TYPE_URLS.routeConfiguration)!.resources, []);
});

Deno.test("route configurations: sidecars share them unless a match selects by source (sourceLabels here)", () => {
  const config = (sourceLabels?: Record<string, string>) => [
    res("WorkloadEntry", "default", "sleep-1", { address: "10.1.0.3", labels: { app: "sleep" } }),
    res("WorkloadEntry", "default", "other-1", { address: "10.1.0.4", labels: { app: "other" } }),
    res("ServiceEntry", "default", "echo", {
      hosts: ["echo.example.com"],
      ports: [{ name: "tcp", number: 9000, protocol: "TCP" }],
      resolution: "DNS",
    }),
    res("VirtualService", "default", "echo", {
      hosts: ["echo.example.com"],
      tcp: [{
        ...(sourceLabels ? { match: [{ sourceLabels }] } : {}),
        route: [{ destination: { host: "v2.example.com", port: { number: 9000 } } }],
      }],
    }),
  ];
  const routeNames = (gen: PushContextGenerator, w: string) =>
    gen.generate(
      { id: `sidecar~x~${w}.default~default.svc.cluster.local`, cluster: "", metadata: {} },
      TYPE_URLS.routeConfiguration,
    )!.resources.map((r) => r.name);
  for (
    const [cfg, other] of [[config(), ["mesh.tcp.9000.default/echo"]], [
      config({ app: "sleep" }),
      [],
    ]] as const
  ) {
    // One generator for both: the second workload gets its own answer, not the first one's.
    const gen = new PushContextGenerator(buildPushContext(cfg, { version: "1" }));
    assert.deepEqual(routeNames(gen, "sleep-1"), ["mesh.tcp.9000.default/echo"]);
    assert.deepEqual(routeNames(gen, "other-1"), other);
  }
});
