import assert from "node:assert/strict";
import { listenersTable } from "./sections.ts";

Deno.test("listenersTable: a gateway listener's DESTINATION per filter chain (PASSTHROUGH tcp_proxy, HTTPS route)", () => {
  const socket = (port: number) => ({ socket_address: { address: "10.1.0.9", port_value: port } });
  const text = listenersTable([
    {
      address: socket(8443),
      traffic_direction: "OUTBOUND",
      filter_chains: [
        {
          filter_chain_match: { server_names: ["nginx.example.com"] },
          filters: [{
            typed_config: {
              weighted_clusters: {
                clusters: [{ name: "outbound|443||my-nginx.foo.svc.cluster.local", weight: 100 }],
              },
            },
          }],
        },
        {
          filter_chain_match: { server_names: ["secure.example.com"] },
          route_config_name: "https.443.s.gw.foo",
        },
      ],
    },
    { address: socket(8080), traffic_direction: "OUTBOUND", route_config_name: "http.80" },
    {
      address: { socket_address: { address: "127.0.0.1", port_value: 15001 } },
      traffic_direction: "OUTBOUND",
    },
  ], false);
  const rows = text.trimEnd().split("\n").map((l) => l.split(/\s{2,}/).at(-1));
  assert.deepEqual(rows, [
    "DESTINATION",
    "SNI nginx.example.com → outbound|443||my-nginx.foo.svc.cluster.local; SNI secure.example.com → Route: https.443.s.gw.foo",
    "Route: http.80",
    "outbound clusters by original destination",
  ]);
});
