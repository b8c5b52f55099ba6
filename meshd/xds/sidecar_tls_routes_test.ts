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
});
