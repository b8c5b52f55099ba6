import assert from "node:assert/strict";
import { parse } from "yaml";
import type { GatewaySpec, VirtualServiceSpec } from "../api/types.gen.ts";
import { gatewayRouteConfigurations } from "./gateway_routes.ts";
import type { NamedSpec, RouteConfiguration } from "./route_configuration.ts";
import { selectBySni, selectTlsRoute } from "./route_selection.ts";
import { passthroughTls } from "./tls_routes.ts";
import { gw, INGRESS, vs } from "./_test_support.ts";

const TASK = new URL("../../tests/fixtures/istio/ingress-sni-passthrough/", import.meta.url);

/** A fixture of Istio's task, applied in `namespace` (its YAML names none). */
function taskResource<S>(file: string, namespace: string): NamedSpec<S> {
  const doc = parse(Deno.readTextFileSync(new URL(file, TASK)));
  return { namespace, name: doc.metadata.name, spec: doc.spec };
}

Deno.test("passthrough: Istio's ingress-sni-passthrough task becomes tls.443 routing nginx.example.com to my-nginx", () => {
  const skipped: string[] = [];
  const rcs = gatewayRouteConfigurations(INGRESS, {
    gateways: [taskResource<GatewaySpec>("01_gateway_mygateway_passthrough.yaml", "default")],
    virtualServices: [taskResource<VirtualServiceSpec>("02_virtual_service_nginx_tls.yaml", "default")],
  }, {
    targetPortOf: (p) => (p === 443 ? 8443 : undefined),
    onSkip: (s) => skipped.push(s.reason),
    onSkipRoute: (s) => skipped.push(s.reason),
  });
  assert.deepEqual(skipped, []);
  assert.deepEqual(rcs, [{
    name: "tls.443.https.mygateway.default",
    port: 443,
    bindPort: 8443,
    gateways: ["default/mygateway"],
    virtualHosts: [],
    tls: {
      mode: "PASSTHROUGH",
      sniHosts: ["nginx.example.com"],
      credentialName: "",
      caCredentialName: "",
      minProtocolVersion: "",
      maxProtocolVersion: "",
      subjectAltNames: [],
    },
    tlsRoutes: [{
      name: "default/nginx.tls.0",
      sniHosts: ["nginx.example.com"],
      destinations: [{ host: "my-nginx.default.svc.cluster.local", port: 443, weight: 100 }],
    }],
  }]);
});

// One Gateway: PASSTHROUGH on 443 for *.example.com, TLS protocol on 9443 for every host, a SIMPLE
// server on 443 for secure.example.com beside them.
const GW = gw(
  "foo",
  "pass",
  `{selector: {istio: ingressgateway}, servers: [
     {port: {number: 443, name: https, protocol: HTTPS}, hosts: ["*.example.com"], tls: {mode: PASSTHROUGH}},
     {port: {number: 9443, name: tls, protocol: TLS}, hosts: ["bar/*"], tls: {}},
     {port: {number: 443, name: https-secure, protocol: HTTPS}, hosts: [secure.example.com],
      tls: {mode: SIMPLE, credentialName: c}}]}`,
);

Deno.test("passthrough: which tls rules a server takes, and which are reported", () => {
  const cases: {
    name: string;
    services: NamedSpec<VirtualServiceSpec>[];
    /** Route configuration name → `<route> <sni hosts> → <destinations>`. */
    want: Record<string, string[]>;
    skipped?: string[];
  }[] = [
    {
      name: "sniHosts within the server's hosts; the narrower of both; port and gateways matches",
      services: [vs(
        "foo",
        "a",
        `{hosts: ["*.example.com", "a.other.org"], gateways: [pass], tls: [
           {match: [{sniHosts: [a.example.com, a.other.org]}], route: [{destination: {host: a, port: {number: 8443}}}]},
           {match: [{sniHosts: ["*.example.com"], port: 9443}], route: [{destination: {host: b, port: {number: 1}}}]},
           {match: [{sniHosts: ["*.example.com"], gateways: [foo/other]}], route: [{destination: {host: c, port: {number: 1}}}]},
           {match: [{sniHosts: ["*.example.com"]}], route: [
             {destination: {host: d.bar.svc.cluster.local, port: {number: 443}}, weight: 80},
             {destination: {host: e, port: {number: 443}}, weight: 20}]}]}`,
      )],
      want: {
        "https.443.https-secure.pass.foo": [],
        "tls.443.https.pass.foo": [
          "foo/a.tls.0 a.example.com → a.foo.svc.cluster.local:8443/100",
          "foo/a.tls.3 *.example.com → d.bar.svc.cluster.local:443/80 e.foo.svc.cluster.local:443/20",
        ],
      },
    },
    {
      name:
        "server bar/* admits only VirtualServices of bar; sourceLabels and sourceNamespace are the gateway's",
      services: [
        vs(
          "foo",
          "f",
          `{hosts: [f.io], gateways: [foo/pass], tls: [{match: [{sniHosts: [f.io]}], route: [{destination: {host: f, port: {number: 1}}}]}]}`,
        ),
        vs(
          "bar",
          "g",
          `{hosts: ["*.io"], gateways: [foo/pass], tls: [
             {match: [{sniHosts: [g.io], sourceLabels: {istio: ingressgateway}}], route: [{destination: {host: g, port: {number: 2}}}]},
             {match: [{sniHosts: [h.io], sourceLabels: {istio: egressgateway}}], route: [{destination: {host: h, port: {number: 2}}}]},
             {match: [{sniHosts: [i.io], sourceNamespace: mesh-system}], route: [{destination: {host: i, port: {number: 2}}}]},
             {match: [{sniHosts: [j.io], sourceNamespace: foo}], route: [{destination: {host: j, port: {number: 2}}}]}]}`,
        ),
      ],
      want: {
        "https.443.https-secure.pass.foo": [],
        "tls.9443.tls.pass.foo": [
          "bar/g.tls.0 g.io → g.bar.svc.cluster.local:2/100",
          "bar/g.tls.2 i.io → i.bar.svc.cluster.local:2/100",
        ],
      },
    },
    {
      name: "destinationSubnets never match; a subset or a destination without port is not used",
      services: [vs(
        "foo",
        "k",
        `{hosts: ["*.example.com"], gateways: [pass], tls: [
           {match: [{sniHosts: [k.example.com], destinationSubnets: [10.0.0.0/8]}], route: [{destination: {host: k, port: {number: 1}}}]},
           {match: [{sniHosts: [l.example.com]}], route: [{destination: {host: l, subset: v1, port: {number: 1}}}]},
           {match: [{sniHosts: [m.example.com]}], route: [{destination: {host: m}}]}]}`,
      )],
      want: { "https.443.https-secure.pass.foo": [] },
      skipped: [
        "foo/k tls[0]: match with destinationSubnets is not supported at a gateway; it never matches",
        "foo/k tls[1]: destination l subset v1 needs a DestinationRule, which is not supported; the rule is not used",
        "foo/k tls[2]: destination m.foo.svc.cluster.local names no port and is not a service with exactly one port",
        "servers[0] 443: PASSTHROUGH: no VirtualService bound to this Gateway has a tls rule whose sniHosts are " +
        "among the server's hosts",
        "servers[1] 9443: PASSTHROUGH: no VirtualService bound to this Gateway has a tls rule whose sniHosts are " +
        "among the server's hosts",
      ],
    },
  ];
  for (const c of cases) {
    const skipped: string[] = [];
    const rcs = gatewayRouteConfigurations(INGRESS, { gateways: [GW], virtualServices: c.services }, {
      onSkip: (s) => skipped.push(`servers[${s.server}] ${s.port}: ${s.reason}`),
      onSkipRoute: (s) => skipped.push(`${s.virtualService} tls[${s.rule}]: ${s.reason}`),
    });
    const got = Object.fromEntries(rcs.map((rc) => [
      rc.name,
      (rc.tlsRoutes ?? []).map((r) =>
        `${r.name} ${r.sniHosts.join(",")} → ${
          r.destinations.map((d) => `${d.host}:${d.port}/${d.weight}`).join(" ")
        }`
      ),
    ]));
    assert.deepEqual(got, c.want, c.name);
    if (c.skipped) assert.deepEqual(skipped, c.skipped, c.name);
  }
});

Deno.test("passthrough: a port with plain-text HTTP servers cannot also pass TLS through", () => {
  const skipped: string[] = [];
  gatewayRouteConfigurations(INGRESS, {
    gateways: [gw(
      "foo",
      "mixed",
      `{selector: {istio: ingressgateway}, servers: [
         {port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]},
         {port: {number: 80, name: tls, protocol: TLS}, hosts: ["*"], tls: {mode: PASSTHROUGH}}]}`,
    )],
    virtualServices: [],
  }, { onSkip: (s) => skipped.push(`servers[${s.server}]: ${s.reason}`) });
  assert.deepEqual(skipped, [
    "servers[1]: port 80 also has plain-text HTTP servers; one port cannot serve both",
  ]);
});

Deno.test("selectTlsRoute and selectBySni: most specific SNI first, * takes no SNI, no match is undefined", () => {
  const rc: RouteConfiguration = {
    name: "tls.443.https.pass.foo",
    port: 443,
    bindPort: 443,
    gateways: [],
    virtualHosts: [],
    tls: passthroughTls(["*", "*.example.com", "a.example.com", "*.b.example.com"]),
    tlsRoutes: [
      { name: "any", sniHosts: ["*"], destinations: [] },
      { name: "wide", sniHosts: ["*.example.com"], destinations: [] },
      { name: "exact", sniHosts: ["a.example.com"], destinations: [] },
      { name: "narrow", sniHosts: ["*.b.example.com"], destinations: [] },
      { name: "exact-again", sniHosts: ["a.example.com"], destinations: [] },
    ],
  };
  const cases: [string | undefined, string | undefined][] = [
    ["a.example.com", "exact"],
    ["A.Example.COM", "exact"],
    ["x.b.example.com", "narrow"],
    ["b.example.com", "wide"],
    ["example.com", "any"],
    [undefined, "any"],
  ];
  for (const [sni, want] of cases) assert.equal(selectTlsRoute(rc, sni)?.name, want, String(sni));
  const narrow = {
    ...rc,
    tlsRoutes: rc.tlsRoutes!.slice(1),
    tls: { ...rc.tls!, sniHosts: ["*.example.com"] },
  };
  assert.equal(selectTlsRoute(narrow, "example.com"), undefined);
  assert.equal(selectTlsRoute(narrow, undefined), undefined);
  assert.equal(selectBySni([narrow], "q.example.com")?.name, rc.name);
  assert.equal(selectBySni([narrow], "example.org"), undefined);
});
