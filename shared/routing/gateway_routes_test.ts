import assert from "node:assert/strict";
import type { GatewaySpec, VirtualServiceSpec } from "../api/types.gen.ts";
import { gatewayRouteConfigurations, gatewaysSelecting } from "./gateway_routes.ts";
import type { NamedSpec } from "./route_configuration.ts";
import { gw, INGRESS, vs } from "./_test_support.ts";

// Istio's "Ingress Gateways" task, for httpbin.
const HTTPBIN_GW = gw(
  "foo",
  "httpbin-gateway",
  `{selector: {istio: ingressgateway}, servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["httpbin.example.com"]}]}`,
);
const HTTPBIN_VS = vs(
  "foo",
  "httpbin",
  `{hosts: ["httpbin.example.com"], gateways: [httpbin-gateway], http: [
     {match: [{uri: {prefix: /status}}, {uri: {prefix: /delay}}], route: [{destination: {port: {number: 8000}, host: httpbin}}]}]}`,
);

Deno.test("gatewaysSelecting: selector labels, any namespace unless scoped; no selector selects nothing", () => {
  const other = gw("bar", "other", `{selector: {istio: egress}, servers: []}`);
  const none = gw("mesh-system", "none", `{servers: []}`);
  const cases: [string, NamedSpec<GatewaySpec>[], boolean, string[]][] = [
    ["matching selector in another namespace", [HTTPBIN_GW, other, none], false, ["foo/httpbin-gateway"]],
    ["scoped to the workload's namespace", [HTTPBIN_GW, other, none], true, []],
  ];
  for (const [name, gateways, scoped, want] of cases) {
    const got = gatewaysSelecting(gateways, INGRESS, { scopeToNamespace: scoped }).map((g) =>
      `${g.namespace}/${g.name}`
    );
    assert.deepEqual(got, want, name);
  }
});

Deno.test("gatewayRouteConfigurations: Istio's ingress task becomes http.80 with FQDN destinations", () => {
  const [rc, ...rest] = gatewayRouteConfigurations(INGRESS, {
    gateways: [HTTPBIN_GW],
    virtualServices: [HTTPBIN_VS],
  }, {
    targetPortOf: (p) => (p === 80 ? 8080 : undefined),
  });
  assert.equal(rest.length, 0);
  assert.deepEqual(rc, {
    name: "http.80",
    port: 80,
    bindPort: 8080,
    gateways: ["foo/httpbin-gateway"],
    virtualHosts: [{
      name: "httpbin.example.com:80",
      domains: ["httpbin.example.com"],
      routes: [{
        name: "foo/httpbin.0",
        matches: [
          { exact: "", prefix: "/status", regex: "", ignoreCase: false },
          { exact: "", prefix: "/delay", regex: "", ignoreCase: false },
        ],
        destinations: [{ host: "httpbin.foo.svc.cluster.local", port: 8000, weight: 100 }],
      }],
    }],
  });
});

Deno.test("gatewayRouteConfigurations: binding, host intersection and what is skipped", () => {
  const wildcardGw = gw(
    "foo",
    "wild",
    `{selector: {istio: ingressgateway}, servers: [
       {port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]},
       {port: {number: 443, name: https, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: c}},
       {port: {number: 9000, name: tcp, protocol: TCP}, hosts: ["*"]}]}`,
  );
  const nsGw = gw(
    "foo",
    "ns-only",
    `{selector: {istio: ingressgateway}, servers: [{port: {number: 8081, name: http, protocol: HTTP}, hosts: ["./*.example.com"]}]}`,
  );
  const cases: {
    name: string;
    services: NamedSpec<VirtualServiceSpec>[];
    gateways?: NamedSpec<GatewaySpec>[];
    want: Record<string, string[]>;
  }[] = [
    {
      name: "a VirtualService without gateways binds to none (mesh only)",
      services: [
        vs("foo", "a", `{hosts: ["*"], http: [{route: [{destination: {host: a, port: {number: 1}}}]}]}`),
      ],
      want: { "http.80": [], "http.8081": [], "https.443.https.wild.foo": [] },
    },
    {
      name: "VirtualService host * on server *; namespace/name reference",
      services: [
        vs("bar", "b", `{hosts: ["*"], gateways: [foo/wild], http: [{route: [{destination: {host: b}}]}]}`),
      ],
      want: { "http.80": ["*:80 bar/b.0"], "http.8081": [], "https.443.https.wild.foo": ["*:443 bar/b.0"] },
    },
    {
      name: "server ./*.example.com admits only its own namespace, and the narrower host wins",
      services: [
        vs("foo", "c", `{hosts: ["*"], gateways: [ns-only], http: [{route: [{destination: {host: c}}]}]}`),
        vs(
          "bar",
          "d",
          `{hosts: ["d.example.com"], gateways: [foo/ns-only], http: [{route: [{destination: {host: d}}]}]}`,
        ),
        vs(
          "foo",
          "e",
          `{hosts: ["e.example.com"], gateways: [ns-only], http: [{route: [{destination: {host: e}}]}]}`,
        ),
      ],
      want: {
        "http.80": [],
        "http.8081": ["e.example.com:8081 foo/e.0", "*.example.com:8081 foo/c.0"],
        "https.443.https.wild.foo": [],
      },
    },
    {
      name: "rules with redirect, or matches only for another port or gateway, are skipped",
      services: [
        vs(
          "foo",
          "f",
          `{hosts: ["*"], gateways: [wild], http: [
             {redirect: {uri: /x}},
             {match: [{port: 8081}], route: [{destination: {host: f}}]},
             {match: [{gateways: [foo/ns-only]}], route: [{destination: {host: f}}]},
             {match: [{method: {exact: GET}}], route: [{destination: {host: f}}]},
             {route: [{destination: {host: f}}]}]}`,
        ),
      ],
      want: { "http.80": ["*:80 foo/f.4"], "http.8081": [], "https.443.https.wild.foo": ["*:443 foo/f.4"] },
    },
  ];
  for (const c of cases) {
    const got = Object.fromEntries(
      gatewayRouteConfigurations(INGRESS, {
        gateways: c.gateways ?? [wildcardGw, nsGw],
        virtualServices: c.services,
      })
        .map((rc) => [rc.name, rc.virtualHosts.flatMap((v) => v.routes.map((r) => `${v.name} ${r.name}`))]),
    );
    assert.deepEqual(got, c.want, c.name);
  }
});

Deno.test("gatewayRouteConfigurations: http[].timeout becomes the route's timeoutMs (absent: none)", () => {
  const cases: [string, number | undefined][] = [
    ["timeout: 1.5s", 1500],
    ["timeout: 500ms", 500],
    ["timeout: 1m30s", 90_000],
    ["", undefined],
  ];
  for (const [field, want] of cases) {
    const spec = `{hosts: ["httpbin.example.com"], gateways: [httpbin-gateway], http: [
      {${field}${field ? ", " : ""}route: [{destination: {port: {number: 8000}, host: httpbin}}]}]}`;
    const [rc] = gatewayRouteConfigurations(INGRESS, {
      gateways: [HTTPBIN_GW],
      virtualServices: [vs("foo", "httpbin", spec)],
    });
    assert.equal(rc.virtualHosts[0].routes[0].timeoutMs, want, field || "no timeout");
  }
});
