import assert from "node:assert/strict";
import { gatewayRouteConfigurations } from "./gateway_routes.ts";
import type { RouteConfiguration } from "./route_configuration.ts";
import { selectBySni, selectRoute } from "./route_selection.ts";
import { gw, INGRESS, vs } from "./_test_support.ts";

Deno.test("selectRoute: virtual host by Host, first matching route, query ignored", () => {
  const rc = gatewayRouteConfigurations(INGRESS, {
    gateways: [gw(
      "foo",
      "g",
      `{selector: {istio: ingressgateway}, servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]}`,
    )],
    virtualServices: [
      vs(
        "foo",
        "exact",
        `{hosts: [api.example.com], gateways: [g], http: [
           {match: [{uri: {exact: /status/200}}], route: [{destination: {host: one}}]},
           {match: [{uri: {regex: "/ip|/headers"}}], route: [{destination: {host: two}}]},
           {match: [{uri: {prefix: /ANY}, ignoreUriCase: true}], route: [{destination: {host: three}}]}]}`,
      ),
      vs(
        "foo",
        "wild",
        `{hosts: ["*.example.com"], gateways: [g], http: [{route: [{destination: {host: four}}]}]}`,
      ),
      vs(
        "foo",
        "all",
        `{hosts: ["*"], gateways: [g], http: [{match: [{uri: {prefix: /}}], route: [{destination: {host: five}}]}]}`,
      ),
    ],
  })[0];
  const cases: [string, string, string][] = [
    ["api.example.com", "/status/200?x=1", "foo/exact.0"],
    ["API.example.com:80", "/headers", "foo/exact.1"],
    ["api.example.com", "/any/thing", "foo/exact.2"],
    ["api.example.com", "/nothing", "404 no route for /nothing in virtual host api.example.com:80"],
    ["www.example.com", "/x", "foo/wild.0"],
    ["example.com", "/x", "foo/all.0"],
    ["10.0.0.1:80", "/", "foo/all.0"],
  ];
  for (const [host, path, want] of cases) {
    const r = selectRoute(rc, host, path);
    assert.equal(r.ok ? r.route.name : `${r.status} ${r.reason}`, want, `${host} ${path}`);
  }
  const empty = { ...rc, virtualHosts: [] };
  assert.deepEqual(selectRoute(empty, "x", "/"), {
    ok: false,
    status: 404,
    reason: "no virtual host for x on gateway port 80",
  });
});

Deno.test("selectBySni: exact host, then the longest wildcard, then *; no SNI only *", () => {
  const rc = (name: string, sniHosts: string[]) =>
    ({ name, tls: { sniHosts } }) as unknown as RouteConfiguration;
  const configs = [
    rc("star", ["*"]),
    rc("wide", ["*.example.com"]),
    rc("narrow", ["*.a.example.com"]),
    rc("exact", ["x.a.example.com", "y.com"]),
  ];
  const pick = (sni: string | undefined, list = configs) => selectBySni(list, sni)?.name;
  assert.equal(pick("X.A.example.com"), "exact");
  assert.equal(pick("z.a.example.com"), "narrow");
  assert.equal(pick("b.example.com"), "wide");
  assert.equal(pick("other.org"), "star");
  assert.equal(pick(undefined), "star");
  assert.equal(pick("other.org", configs.slice(1)), undefined);
  assert.equal(pick(undefined, configs.slice(1)), undefined);
});
