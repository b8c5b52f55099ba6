import assert from "node:assert/strict";
import { endpointsTable, listenersTable } from "./sections.ts";

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

Deno.test("endpointsTable: IDENTITY only where the client dials mutual TLS (proxied, tls_mode not disabled)", () => {
  const id = "spiffe://cluster.local/ns/foo/sa/httpbin";
  const row = (metadata: Record<string, unknown>) => ({
    address: "10.1.0.2",
    port: 8080,
    status: "HEALTHY",
    cluster: "outbound|8000||httpbin.foo.svc.cluster.local",
    metadata,
  });
  const cases: [string, Record<string, unknown>, string][] = [
    ["proxied, istio", { proxied: true, identity: id, tls_mode: "istio" }, id],
    ["proxied, older proxy without tls_mode", { proxied: true, identity: id }, id],
    ["proxied, server DISABLE", { proxied: true, identity: id, tls_mode: "disabled" }, "- (plain text)"],
    ["not proxied", { proxied: false, identity: "", tls_mode: "disabled" }, "- (plain text)"],
  ];
  for (const [name, metadata, want] of cases) {
    const last = endpointsTable([row(metadata)]).trim().split("\n").at(-1)!;
    assert.ok(last.trimEnd().endsWith(want), `${name}: ${last}`);
  }
});
