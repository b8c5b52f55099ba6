import assert from "node:assert/strict";
import { grpcBootstrap } from "./bootstrap.ts";

Deno.test("grpcBootstrap: plain-text meshd, GENERATOR grpc, the file_watcher provider and Istio's template", () => {
  const b = grpcBootstrap({
    discoveryAddress: "meshd.mesh-system.svc:15010",
    nodeId: "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local",
    metadata: { NAMESPACE: "ns", WORKLOAD_NAME: "a", GENERATOR: "other" },
    certDir: "/var/run/mesh",
  });
  assert.deepEqual(b, {
    xds_servers: [{
      server_uri: "meshd.mesh-system.svc:15010",
      channel_creds: [{ type: "insecure" }],
      server_features: ["xds_v3"],
    }],
    node: {
      id: "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local",
      metadata: { NAMESPACE: "ns", WORKLOAD_NAME: "a", GENERATOR: "grpc" },
      locality: {},
    },
    certificate_providers: {
      default: {
        plugin_name: "file_watcher",
        config: {
          certificate_file: "/var/run/mesh/cert-chain.pem",
          private_key_file: "/var/run/mesh/key.pem",
          ca_certificate_file: "/var/run/mesh/root-cert.pem",
          refresh_interval: "60s",
        },
      },
    },
    server_listener_resource_name_template: "xds.istio.io/grpc/lds/inbound/%s",
  });
});
