import assert from "node:assert/strict";
import { b64, makeTestCa } from "../../shared/credentials/_test_support.ts";
import { gatewayRoutesOf } from "./gateway_routes.ts";
import { buildPushContext } from "./push_context.ts";
import { configResource as res, httpsGateway, secretResource } from "./test_support.ts";

Deno.test("gateway routes: bind ports from the selecting service's targetPort; a server without its credential is a warning", async () => {
  const { leaf } = await makeTestCa();
  const cert = await leaf("www.example.com");
  const ctx = buildPushContext([
    secretResource("mesh-system", "www", { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) }),
    res("WorkloadEntry", "mesh-system", "ingress", {
      address: "10.0.0.9",
      labels: { istio: "ingressgateway" },
    }),
    res("ServiceEntry", "mesh-system", "ingress", {
      hosts: ["ingress.mesh-system.svc.cluster.local"],
      ports: [{ name: "https", number: 443, targetPort: 8443, protocol: "HTTPS" }],
      resolution: "STATIC",
      workloadSelector: { labels: { istio: "ingressgateway" } },
    }),
    httpsGateway([[443, "https", "www"], [9443, "https-2", "none"]]),
  ], { version: "1" });
  const warnings: string[] = [];
  const routes = gatewayRoutesOf(ctx.workloads.get("mesh-system/ingress")!, ctx, (m) => warnings.push(m));
  assert.deepEqual(routes.map((r) => [r.name, r.port, r.bindPort, r.tls?.credentialName]), [
    ["https.443.https.public.mesh-system", 443, 8443, "kubernetes://www"],
  ]);
  assert.deepEqual(warnings, [
    "Gateway mesh-system/public spec.servers[1] (port 9443) is not served on gateway mesh-system/ingress: " +
    "credentialName none: no Secret none with a certificate and key in the gateway workload's namespace",
  ]);
  // The push context holds the same, and its warnings.
  assert.deepEqual(ctx.gatewayRoutes.get("mesh-system/ingress"), routes);
  assert.deepEqual(ctx.gatewayWarnings, warnings);
});
