import assert from "node:assert/strict";
import type { VirtualServiceSpec } from "../api/types.gen.ts";
import { meshL4RuleWarnings, meshTcpRouteConfigurations } from "./mesh_tcp_routes.ts";
import type { MeshTlsService } from "./mesh_tls_routes.ts";

const SLEEP = { namespace: "default", labels: { app: "sleep" } };
const ECHO: MeshTlsService = {
  key: "default/tcp-echo",
  hosts: ["tcp-echo.default.svc.cluster.local"],
  ports: [{ number: 9000, protocol: "TCP" }, { number: 9001, protocol: "" }, {
    number: 8080,
    protocol: "HTTP",
  }],
};
const to = (host: string, weight?: number) => ({ destination: { host, port: { number: 9000 } }, weight });
type Tcp = NonNullable<VirtualServiceSpec["tcp"]>;
const routesOf = (tcp: Tcp, extra: Partial<VirtualServiceSpec> = {}, skipped: string[] = []) =>
  meshTcpRouteConfigurations(
    SLEEP,
    [{ namespace: "default", name: "echo", spec: { hosts: ["tcp-echo"], tcp, ...extra } }],
    [ECHO],
    { onSkipRoute: (s) => skipped.push(s.reason) },
  ).map((
    rc,
  ) => [
    rc.name,
    rc.tlsRoutes!.map((r) => `${r.name} ${r.sniHosts} ${r.destinations.map((d) => d.host).join(",")}`),
  ]);

const V2 = "tcp-echo-v2.default.svc.cluster.local";
const CASES: { name: string; tcp: Tcp; extra?: Partial<VirtualServiceSpec>; want: [string, string[]][] }[] = [
  {
    name: "no match: every TCP port (TCP and auto-detected, not HTTP)",
    tcp: [{ route: [to("tcp-echo-v2")] }],
    want: [
      ["mesh.tcp.9000.default/tcp-echo", [`default/echo.tcp.0 * ${V2}`]],
      ["mesh.tcp.9001.default/tcp-echo", [`default/echo.tcp.0 * ${V2}`]],
    ],
  },
  {
    name: "a port match: that port only",
    tcp: [{ match: [{ port: 9000 }], route: [to("tcp-echo-v2")] }],
    want: [["mesh.tcp.9000.default/tcp-echo", [`default/echo.tcp.0 * ${V2}`]]],
  },
  {
    name: "the first rule that holds wins",
    tcp: [{ match: [{ sourceLabels: { app: "other" } }], route: [to("x")] }, { route: [to("tcp-echo-v2")] }, {
      route: [to("y")],
    }],
    want: [
      ["mesh.tcp.9000.default/tcp-echo", [`default/echo.tcp.1 * ${V2}`]],
      ["mesh.tcp.9001.default/tcp-echo", [`default/echo.tcp.1 * ${V2}`]],
    ],
  },
  { name: "bound to a gateway only", tcp: [{ route: [to("x")] }], extra: { gateways: ["gw"] }, want: [] },
  { name: "a match for a gateway", tcp: [{ match: [{ gateways: ["gw"] }], route: [to("x")] }], want: [] },
  {
    name: "another source namespace",
    tcp: [{ match: [{ sourceNamespace: "x" }], route: [to("x")] }],
    want: [],
  },
  {
    name: "destinationSubnets: never matches",
    tcp: [{ match: [{ destinationSubnets: ["10.0.0.0/8"] }], route: [to("x")] }],
    want: [],
  },
];

for (const c of CASES) {
  Deno.test(`mesh tcp routes: ${c.name}`, () => {
    assert.deepEqual(routesOf(c.tcp, c.extra), c.want);
  });
}

Deno.test("mesh tcp routes: a subset destination is reported and the next rule considered; weights kept", () => {
  const skipped: string[] = [];
  const got = meshTcpRouteConfigurations(
    SLEEP,
    [{
      namespace: "default",
      name: "echo",
      spec: {
        hosts: ["tcp-echo"],
        tcp: [
          { match: [{ port: 9000 }], route: [{ destination: { host: "tcp-echo", subset: "v1" } }] },
          { match: [{ port: 9000 }], route: [to("tcp-echo", 80), to("tcp-echo-v2", 20)] },
        ],
      },
    }],
    [ECHO],
    { onSkipRoute: (s) => skipped.push(s.reason) },
  );
  assert.equal(skipped.length, 1);
  assert.match(skipped[0], /subset v1 needs a DestinationRule/);
  assert.deepEqual(got.map((rc) => rc.tlsRoutes), [[{
    name: "default/echo.tcp.1",
    sniHosts: ["*"],
    destinations: [
      { host: "tcp-echo.default.svc.cluster.local", port: 9000, weight: 80 },
      { host: V2, port: 9000, weight: 20 },
    ],
  }]]);
});

Deno.test("mesh L4 rule warnings: subsets and destinationSubnets of rules bound to mesh, by field", () => {
  const spec = (gateways?: string[]): VirtualServiceSpec => ({
    hosts: ["tcp-echo"],
    ...(gateways ? { gateways } : {}),
    tcp: [{ match: [{ port: 9000 }, { destinationSubnets: ["10.0.0.0/8"] }], route: [to("tcp-echo")] }],
    tls: [{
      match: [{ sniHosts: ["tcp-echo"] }],
      route: [{ destination: { host: "tcp-echo", subset: "v1" } }],
    }],
  });
  assert.deepEqual(
    meshL4RuleWarnings([{ namespace: "default", name: "echo", spec: spec() }, {
      namespace: "default",
      name: "gw-only",
      spec: spec(["gw"]),
    }]),
    [
      "VirtualService default/echo spec.tls[0]: destination tcp-echo subset v1 needs a DestinationRule, " +
      "which is not supported; sidecars do not use the rule",
      "VirtualService default/echo spec.tcp[0].match[1].destinationSubnets is not supported at sidecars; " +
      "the match never matches",
    ],
  );
});
