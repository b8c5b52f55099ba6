import assert from "node:assert/strict";
import { buildPushContext, type ConfigResource } from "../../push_context/push_context.ts";
import { configResource as res } from "../../push_context/test_support.ts";
import { PushContextGenerator, TYPE_URLS } from "../generators.ts";
import { GRPC_TYPE_URLS } from "./grpcgen.ts";
import { decodeEnvoy, ENVOY_TYPES } from "../../../shared/internal/xds/envoy_types.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

function config(mode: "STRICT" | "PERMISSIVE" | "DISABLE", proxied = true): ConfigResource[] {
  return [
    res("ServiceEntry", "echo", "echo", {
      hosts: ["echo.echo.svc"],
      ports: [{ name: "grpc", number: 7070, targetPort: 17070, protocol: "GRPC" }],
      resolution: "STATIC",
      workloadSelector: { labels: { app: "echo" } },
    }),
    res("WorkloadEntry", "echo", "echo-1", {
      address: "10.0.0.1",
      labels: { app: "echo", ...(proxied ? { "security.mesh.io/tlsMode": "mesh" } : {}) },
      serviceAccount: "echo",
      locality: "r1/z1/s1",
      weight: 3,
    }),
    res("WorkloadEntry", "echo", "echo-2", {
      address: "10.0.0.2",
      labels: { app: "echo", ...(proxied ? { "security.mesh.io/tlsMode": "mesh" } : {}) },
      serviceAccount: "echo",
    }),
    res("PeerAuthentication", "echo", "mode", { mtls: { mode } }),
    res("AuthorizationPolicy", "echo", "deny-x", {
      action: "DENY",
      rules: [{ from: [{ source: { principals: ["cluster.local/ns/x/sa/x"] } }] }],
    }),
  ];
}

const proxyless = (metadata: Record<string, unknown> = {}) => ({
  id: "sidecar~10.0.0.1~echo-1.echo~echo.svc.cluster.local",
  cluster: "",
  metadata: { GENERATOR: "grpc", ...metadata },
});

function generate(
  cfg: ConfigResource[],
  typeUrl: string,
  fullName: string,
  metadata = {},
): Map<string, Json> {
  const gen = new PushContextGenerator(buildPushContext(cfg, { version: "v1" }));
  const list = gen.generate(proxyless(metadata), typeUrl);
  assert.ok(list, `${typeUrl} is served to proxyless nodes`);
  return new Map(list.resources.map((r) => [r.name, decodeEnvoy(fullName, r.body)]));
}

const inner = (anyValue: Json, fullName: string): Json => decodeEnvoy(fullName, anyValue.value);

Deno.test("grpcgen: LDS api_listener per host:port with RDS over ADS and the router filter", () => {
  const lds = generate(config("STRICT"), GRPC_TYPE_URLS.listener, ENVOY_TYPES.listener);
  const l = lds.get("echo.echo.svc:7070");
  const hcm = inner(l.apiListener.apiListener, ENVOY_TYPES.hcm);
  assert.deepEqual(hcm.rds, {
    configSource: { ads: {}, resourceApiVersion: "V3" },
    routeConfigName: "echo.echo.svc:7070",
  });
  assert.deepEqual(hcm.httpFilters.map((f: Json) => f.name), ["envoy.filters.http.router"]);
});

Deno.test("grpcgen: RDS virtual host for host and host:port to outbound|port||host", () => {
  const rds = generate(config("STRICT"), GRPC_TYPE_URLS.route, ENVOY_TYPES.route);
  assert.deepEqual(rds.get("echo.echo.svc:7070").virtualHosts, [{
    name: "echo.echo.svc:7070",
    domains: ["echo.echo.svc", "echo.echo.svc:7070"],
    routes: [{ match: { prefix: "" }, route: { cluster: "outbound|7070||echo.echo.svc" } }],
  }]);
});

const CDS_CASES = [
  {
    name: "STRICT, proxied: mutual TLS with the endpoints' SPIFFE ID",
    mode: "STRICT",
    proxied: true,
    tls: true,
  },
  {
    name: "PERMISSIVE, proxied: mutual TLS (the server requires it, as istiod's grpcgen lds.go)",
    mode: "PERMISSIVE",
    proxied: true,
    tls: true,
  },
  { name: "PERMISSIVE, not proxied: plain text", mode: "PERMISSIVE", proxied: false, tls: false },
  { name: "DISABLE: plain text", mode: "DISABLE", proxied: true, tls: false },
  { name: "STRICT but not proxied: plain text", mode: "STRICT", proxied: false, tls: false },
] as const;

for (const c of CDS_CASES) {
  Deno.test(`grpcgen: CDS ${c.name}`, () => {
    const cds = generate(config(c.mode, c.proxied), GRPC_TYPE_URLS.cluster, ENVOY_TYPES.cluster);
    const cluster = cds.get("outbound|7070||echo.echo.svc");
    assert.equal(cluster.type, "EDS");
    assert.equal(cluster.edsClusterConfig.serviceName, "outbound|7070||echo.echo.svc");
    assert.equal(cluster.transportSocket !== undefined, c.tls);
    if (!c.tls) return;
    const tls = inner(cluster.transportSocket.typedConfig, ENVOY_TYPES.upstreamTls);
    assert.deepEqual(tls.commonTlsContext, {
      tlsCertificateProviderInstance: { instanceName: "default", certificateName: "default" },
      combinedValidationContext: {
        defaultValidationContext: {
          caCertificateProviderInstance: { instanceName: "default", certificateName: "ROOTCA" },
          matchSubjectAltNames: [{ exact: "spiffe://cluster.local/ns/echo/sa/echo" }],
        },
      },
    });
  });
}

Deno.test("grpcgen: EDS endpoints by locality with weights, at the target port", () => {
  const eds = generate(config("STRICT"), GRPC_TYPE_URLS.endpoint, ENVOY_TYPES.endpoint);
  const cla = eds.get("outbound|7070||echo.echo.svc");
  const byRegion = Object.fromEntries(
    cla.endpoints.map((g: Json) => [
      g.locality.region ?? "",
      {
        weight: g.loadBalancingWeight.value,
        eps: g.lbEndpoints.map((e: Json) => e.endpoint.address.socketAddress),
      },
    ]),
  );
  assert.deepEqual(byRegion, {
    r1: { weight: 3, eps: [{ address: "10.0.0.1", portValue: 17070 }] },
    "": { weight: 1, eps: [{ address: "10.0.0.2", portValue: 17070 }] },
  });
});

// istiod's grpcgen lds.go buildInboundFilterChains: PERMISSIVE is STRICT for a workload whose clients
// use mutual TLS (the tlsMode label), plain text otherwise; gRPC cannot serve both on one port.
const INBOUND_CASES = [
  { mode: "STRICT", proxied: true, chain: "inbound-mtls", tls: true },
  { mode: "STRICT", proxied: false, chain: "inbound-mtls", tls: true },
  { mode: "PERMISSIVE", proxied: true, chain: "inbound-mtls", tls: true },
  { mode: "PERMISSIVE", proxied: false, chain: "inbound-plaintext", tls: false },
  { mode: "DISABLE", proxied: true, chain: "inbound-plaintext", tls: false },
] as const;

for (const c of INBOUND_CASES) {
  Deno.test(`grpcgen: inbound listener, ${c.mode}, ${c.proxied ? "" : "not "}proxied`, () => {
    const cfg = config(c.mode, c.proxied);
    const lds = generate(cfg, GRPC_TYPE_URLS.listener, ENVOY_TYPES.listener, {
      NAMESPACE: "echo",
      WORKLOAD_NAME: "echo-1",
    });
    const names = [...lds.keys()].filter((n) => n.startsWith("xds.istio.io/grpc/lds/inbound/")).sort();
    assert.deepEqual(names, [
      "xds.istio.io/grpc/lds/inbound/0.0.0.0:17070",
      "xds.istio.io/grpc/lds/inbound/10.0.0.1:17070",
      "xds.istio.io/grpc/lds/inbound/[::]:17070",
    ]);
    const l = lds.get("xds.istio.io/grpc/lds/inbound/0.0.0.0:17070");
    assert.deepEqual(l.address, { socketAddress: { address: "0.0.0.0", portValue: 17070 } });
    const [chain] = l.filterChains;
    assert.equal(chain.name, c.chain);
    assert.equal(chain.transportSocket !== undefined, c.tls);
    if (c.tls) {
      const tls = inner(chain.transportSocket.typedConfig, ENVOY_TYPES.downstreamTls);
      assert.deepEqual(tls.requireClientCertificate, { value: true });
    }
    const hcm = inner(chain.filters[0].typedConfig, ENVOY_TYPES.hcm);
    assert.deepEqual(hcm.httpFilters.map((f: Json) => f.name), [
      "envoy.filters.http.rbac.deny",
      "envoy.filters.http.router",
    ]);
    assert.deepEqual(hcm.routeConfig.virtualHosts[0].routes, [{
      match: { prefix: "/" },
      nonForwardingAction: {},
    }]);
  });
}

Deno.test("grpcgen: a node without GENERATOR grpc gets the mesh's types; proxyless nodes never do", () => {
  const gen = new PushContextGenerator(buildPushContext(config("STRICT"), { version: "v1" }));
  const sidecar = { ...proxyless(), metadata: {} };
  assert.equal(gen.generate(sidecar, GRPC_TYPE_URLS.listener), undefined);
  assert.ok(gen.generate(sidecar, TYPE_URLS.service));
  assert.equal(gen.generate(proxyless(), TYPE_URLS.service), undefined);
});
