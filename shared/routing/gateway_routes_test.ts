import assert from "node:assert/strict";
import { parse } from "yaml";
import type { GatewaySpec, VirtualServiceSpec } from "../api/types.gen.ts";
import {
  credentialNamesOf,
  gatewayRouteConfigurations,
  gatewaysSelecting,
  type NamedSpec,
  type RouteConfiguration,
  selectBySni,
  selectRoute,
} from "./gateway_routes.ts";

const INGRESS = { namespace: "mesh-system", labels: { istio: "ingressgateway", app: "gw" } };

function gw(namespace: string, name: string, spec: string): NamedSpec<GatewaySpec> {
  return { namespace, name, spec: parse(spec) };
}
function vs(namespace: string, name: string, spec: string): NamedSpec<VirtualServiceSpec> {
  return { namespace, name, spec: parse(spec) };
}

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

// Istio's "Secure Gateways" task: SIMPLE for httpbin and helloworld on 443, MUTUAL, httpsRedirect.
const SECURE_GW = gw(
  "mesh-system",
  "mygateway",
  `{selector: {istio: ingressgateway}, servers: [
     {port: {number: 443, name: https-httpbin, protocol: HTTPS}, hosts: [httpbin.example.com],
      tls: {mode: SIMPLE, credentialName: httpbin-credential, minProtocolVersion: TLSV1_3}},
     {port: {number: 443, name: https-helloworld, protocol: HTTPS}, hosts: [helloworld.example.com],
      tls: {mode: MUTUAL, credentialName: helloworld-credential}},
     {port: {number: 80, name: http, protocol: HTTP}, hosts: [httpbin.example.com], tls: {httpsRedirect: true}},
     {port: {number: 8443, name: pass, protocol: HTTPS}, hosts: ["*"], tls: {mode: PASSTHROUGH}},
     {port: {number: 8444, name: istio, protocol: HTTPS}, hosts: ["*"], tls: {mode: ISTIO_MUTUAL}},
     {port: {number: 8445, name: files, protocol: HTTPS}, hosts: ["*"],
      tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem}},
     {port: {number: 8446, name: missing, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: nope}},
     {port: {number: 8447, name: noca, protocol: HTTPS}, hosts: ["*"], tls: {mode: MUTUAL, credentialName: httpbin-credential}},
     {port: {number: 80, name: https-on-80, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: httpbin-credential}}]}`,
);
const SECURE_VS = vs(
  "default",
  "httpbin",
  `{hosts: [httpbin.example.com], gateways: [mesh-system/mygateway], http: [
     {match: [{uri: {prefix: /status}}], route: [{destination: {port: {number: 8000}, host: httpbin}}]}]}`,
);
// What the workload's namespace holds: helloworld's CA comes from helloworld-credential-cacert.
const SECRETS: Record<string, { certificate: boolean; ca: boolean }> = {
  "httpbin-credential": { certificate: true, ca: false },
  "helloworld-credential": { certificate: true, ca: false },
  "helloworld-credential-cacert": { certificate: false, ca: true },
};

Deno.test("gatewayRouteConfigurations: HTTPS servers get Istio's https.<port>.<name>.<gw>.<ns> with TLS", () => {
  const skipped: string[] = [];
  const rcs = gatewayRouteConfigurations(INGRESS, { gateways: [SECURE_GW], virtualServices: [SECURE_VS] }, {
    targetPortOf: (p) => (p === 443 ? 8443 : undefined),
    credentialOf: (name) => SECRETS[name],
    onSkip: (s) => skipped.push(`${s.gateway} servers[${s.server}] ${s.port}: ${s.reason}`),
  });
  assert.deepEqual(rcs.map((rc) => [rc.name, rc.bindPort]), [
    ["http.80", 80],
    ["https.443.https-helloworld.mygateway.mesh-system", 8443],
    ["https.443.https-httpbin.mygateway.mesh-system", 8443],
  ]);
  const [http, hello, httpbin] = rcs;
  assert.deepEqual(http.virtualHosts.map((v) => [v.name, v.httpsRedirect, v.routes.length]), [
    ["httpbin.example.com:80", true, 1],
  ]);
  assert.deepEqual(httpbin.tls, {
    mode: "SIMPLE",
    sniHosts: ["httpbin.example.com"],
    credentialName: "kubernetes://httpbin-credential",
    caCredentialName: "",
    minProtocolVersion: "TLSV1_3",
    maxProtocolVersion: "",
    subjectAltNames: [],
  });
  assert.deepEqual(httpbin.virtualHosts.map((v) => `${v.name} ${v.routes.map((r) => r.name)}`), [
    "httpbin.example.com:443 default/httpbin.0",
  ]);
  assert.equal(hello.tls?.mode, "MUTUAL");
  assert.equal(hello.tls?.caCredentialName, "kubernetes://helloworld-credential-cacert");
  assert.deepEqual(hello.virtualHosts, []);
  assert.deepEqual(credentialNamesOf(rcs), [
    "kubernetes://helloworld-credential",
    "kubernetes://helloworld-credential-cacert",
    "kubernetes://httpbin-credential",
  ]);
  assert.deepEqual(skipped, [
    "mesh-system/mygateway servers[3] 8443: tls.mode PASSTHROUGH is not supported (SIMPLE and MUTUAL only)",
    "mesh-system/mygateway servers[4] 8444: tls.mode ISTIO_MUTUAL is not supported (SIMPLE and MUTUAL only)",
    "mesh-system/mygateway servers[5] 8445: certificates from files (serverCertificate, tlsCertificates) " +
    "are not supported; use credentialName",
    "mesh-system/mygateway servers[6] 8446: credentialName nope: no Secret nope with a certificate and key " +
    "in the gateway workload's namespace",
    "mesh-system/mygateway servers[7] 8447: MUTUAL needs a client CA: no Secret httpbin-credential-cacert " +
    "with ca.crt or cacert, and no ca.crt in httpbin-credential",
    "mesh-system/mygateway servers[8] 80: port 80 also has plain-text HTTP servers; one port cannot serve both",
  ]);
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
