import assert from "node:assert/strict";
import { uniformLevels } from "../logging/logger.ts";
import { type LogLevels } from "../../shared/internal/logging/levels.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { type BootstrapInfo, buildConfigDump, XDS_TYPES } from "./config_dump.ts";
import { passthroughTls } from "../../shared/routing/mod.ts";
import { type AdminSource, handleAdmin, type ServerState } from "./server.ts";

const KEY =
  "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSECRET\n-----END PRIVATE KEY-----\n";

const SNAPSHOT: RuntimeSnapshot = {
  revision: 4,
  versions: {
    [XDS_TYPES.workload]: "w1",
    [XDS_TYPES.service]: "s1",
    [XDS_TYPES.authorization]: "a1",
    [XDS_TYPES.jwtPolicy]: "j1",
  },
  workload: {
    name: "httpbin-1",
    namespace: "foo",
    serviceAccount: "httpbin",
    trustDomain: "cluster.local",
    addresses: ["10.1.0.2"],
    labels: { app: "httpbin" },
    proxied: true,
    ports: {},
    inboundMtls: [{ port: 8080, mode: "STRICT", policy: "foo/default", scope: "namespace" }],
    defaultMtls: { port: 0, mode: "PERMISSIVE", policy: "", scope: "" },
    settings: {
      pathNormalization: "MERGE_SLASHES",
      numTrustedProxies: 1,
      denialExplanation: { principals: ["cluster.local/ns/mesh-system/*"], ipBlocks: ["127.0.0.1/32"] },
      outboundTrafficPolicy: "REGISTRY_ONLY",
    },
  },
  services: {
    "foo/httpbin": {
      name: "httpbin",
      namespace: "foo",
      hosts: ["httpbin.foo.svc.cluster.local"],
      addresses: [],
      ports: [{ name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" }],
      endpoints: [{
        workload: "foo/httpbin-1",
        address: "10.1.0.2",
        ports: { "8000": 8080 },
        proxied: true,
        identity: "spiffe://cluster.local/ns/foo/sa/httpbin",
        labels: {},
      }],
      location: "MESH_INTERNAL",
      resolution: "STATIC",
    },
  },
  authorizations: {},
  jwtPolicies: {},
  routes: {},
  credentials: {},
  certificate: {
    certChainPem: "-----BEGIN CERTIFICATE-----\nLEAF\n-----END CERTIFICATE-----\n",
    privateKeyPem: KEY,
    rootsPem: "-----BEGIN CERTIFICATE-----\nROOT\n-----END CERTIFICATE-----\n",
    spiffeId: "spiffe://cluster.local/ns/foo/sa/httpbin",
    notBefore: 0,
    notAfter: 86_400_000 * 3,
  },
};

const BOOTSTRAP: BootstrapInfo = {
  node: {
    id: "sidecar~10.1.0.2~httpbin-1.foo~foo.svc.cluster.local",
    cluster: "httpbin-1.foo",
    metadata: {},
  },
  discoveryAddress: "127.0.0.1:15012",
  plaintext: false,
  caAddress: "127.0.0.1:15012",
  adminPort: 15000,
  concurrency: 2,
  inbound: [{ address: "10.1.0.2", port: 8080, appAddress: "127.0.0.1", appPort: 18080 }],
  connectionLimits: {
    requestHeadersTimeoutMs: 2500,
    requestTimeoutMs: 90_000,
    idleTimeoutMs: 300_000,
    maxConnections: 64,
  },
  startedAt: 0,
};

function source(): AdminSource & { quits: number; levelsNow: LogLevels } {
  const s = {
    quits: 0,
    levelsNow: uniformLevels("warning"),
    bootstrap: BOOTSTRAP,
    snapshot: () => SNAPSHOT,
    lastUpdated: () => ({}),
    agentStatus: () => ({ ads: { connected: true }, jwks: { counters: { success: 3, failed: 1 } } }),
    workerCounters: () =>
      Promise.resolve([0, 1].map((worker) => ({
        worker,
        listeners: [{
          port: 8080,
          counters: {
            downstream_cx_total: 2 + worker,
            downstream_cx_active: 1,
            "ssl.handshake": 1,
            upstream_cx_connect_fail: 1,
          },
        }],
      }))),
    workersApplied: () => [4, 4],
    state: (): ServerState => "LIVE",
    levels: () => ({ ...s.levelsNow }),
    setLevels: (l: Partial<LogLevels>) => (s.levelsNow = { ...s.levelsNow, ...l }),
    quit: () => void s.quits++,
  };
  return s;
}

async function get(path: string, src: AdminSource, method = "GET") {
  const r = await handleAdmin(new Request(`http://127.0.0.1:15000${path}`, { method }), src);
  return { status: r.status, text: await r.text() };
}

Deno.test("config_dump: Envoy's types with version_info; the certificate chain without the private key", () => {
  const dump = buildConfigDump(BOOTSTRAP, SNAPSHOT, {});
  const text = JSON.stringify(dump);
  assert.ok(!text.includes("PRIVATE KEY") && !text.includes("SECRET"), "no private key");
  // deno-lint-ignore no-explicit-any
  const [boot, listeners, clusters, endpoints, routes, secrets, mesh] = dump.configs as Record<string, any>[];
  assert.equal(boot["@type"], "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump");
  assert.equal(listeners.version_info, "w1");
  assert.equal(listeners.dynamic_listeners[0].active_state.listener.mtls.mode, "STRICT");
  // The settings meshd pushed in the Workload, and the limits of --requestHeadersTimeout, --requestTimeout,
  // --idleTimeout and --maxConnections, under Envoy's names.
  const listener = listeners.dynamic_listeners[0].active_state.listener;
  assert.deepEqual(listener.connection_limit, { max_connections: 64 });
  assert.deepEqual(listener.http_connection_manager, {
    path_normalization: "MERGE_SLASHES",
    normalize_path: true,
    merge_slashes: true,
    path_with_escaped_slashes_action: "KEEP_UNCHANGED",
    // A sidecar: Istio sets use_remote_address and the trusted hops on gateways only.
    use_remote_address: false,
    xff_num_trusted_hops: 0,
    denial_explanation: { principals: ["cluster.local/ns/mesh-system/*"], ip_blocks: ["127.0.0.1/32"] },
    outbound_traffic_policy: "REGISTRY_ONLY",
    request_headers_timeout: "2.5s",
    request_timeout: "90s",
    stream_idle_timeout: "300s",
    common_http_protocol_options: { idle_timeout: "300s", max_headers_count: 100 },
    max_request_headers_kb: 60,
  });
  assert.equal(clusters.version_info, "s1");
  assert.equal(clusters.static_clusters[0].cluster.name, "inbound|8080||");
  assert.equal(
    clusters.dynamic_active_clusters[0].cluster.name,
    "outbound|8000||httpbin.foo.svc.cluster.local",
  );
  assert.deepEqual(
    endpoints.dynamic_endpoint_configs[0].endpoint_config.endpoints[0].lb_endpoints[0].endpoint.address,
    { socket_address: { address: "10.1.0.2", port_value: 8080 } },
  );
  // Istio's EDS metadata: "istio" where automatic mTLS dials mutual TLS (proxied, server not DISABLE).
  assert.equal(
    endpoints.dynamic_endpoint_configs[0].endpoint_config.endpoints[0].lb_endpoints[0].metadata.tls_mode,
    "istio",
  );
  assert.equal(routes["@type"], "type.googleapis.com/envoy.admin.v3.RoutesConfigDump");
  assert.equal(
    secrets.dynamic_active_secrets[0].secret.tls_certificate.private_key.inline_string,
    "[redacted]",
  );
  assert.match(secrets.dynamic_active_secrets[1].secret.validation_context.trusted_ca.inline_string, /ROOT/);
  assert.equal(mesh.authorizations.version_info, "a1");
});

Deno.test("admin: /stats sums workers, keeps per-worker connections; prometheus and json formats", async () => {
  const src = source();
  const text = (await get("/stats", src)).text;
  assert.match(text, /^listener\.10\.1\.0\.2_8080\.downstream_cx_total: 5$/m);
  assert.match(text, /^listener\.10\.1\.0\.2_8080\.worker_1\.downstream_cx_total: 3$/m);
  assert.match(text, /^listener\.10\.1\.0\.2_8080\.ssl\.handshake: 2$/m);
  assert.match(text, /^cluster\.inbound\|8080\|\|\.upstream_cx_connect_fail: 2$/m);
  assert.match(text, /^server\.days_until_first_cert_expiring: \d+$/m);
  assert.match(text, /^jwt_authn\.jwks_fetch_failed: 1\njwt_authn\.jwks_fetch_success: 3$/m);
  const prom = (await get("/stats/prometheus", src)).text;
  assert.match(prom, /^# TYPE envoy_listener_downstream_cx_active gauge$/m);
  assert.match(
    prom,
    /^envoy_listener_worker_downstream_cx_total\{envoy_listener_address="10.1.0.2_8080",envoy_worker_id="0"\} 2$/m,
  );
  assert.match(
    prom,
    /^# TYPE envoy_jwt_authn_jwks_fetch_failed counter\nenvoy_jwt_authn_jwks_fetch_failed 1$/m,
  );
  assert.match(prom, /^envoy_cluster_upstream_cx_connect_fail\{envoy_cluster_name="inbound\|8080\|\|"\} 2$/m);
  const json = JSON.parse((await get("/stats?format=json&filter=ssl", src)).text);
  assert.deepEqual(json.stats, [{ name: "listener.10.1.0.2_8080.ssl.handshake", value: 2 }]);
  assert.equal((await get("/stats?filter=(", src)).status, 400);
});

Deno.test("admin: /logging lists, POST changes one, all, or paths; bad input is 400", async () => {
  const src = source();
  assert.match((await get("/logging", src)).text, /^active loggers:\n {2}admin: warning$/m);
  assert.equal((await get("/logging?level=debug", src)).status, 405);
  await get("/logging?level=error", src, "POST");
  assert.deepEqual(new Set(Object.values(src.levelsNow)), new Set(["error"]));
  await get("/logging?paths=inbound:trace,agent:off", src, "POST");
  assert.equal(src.levelsNow.inbound, "trace");
  assert.equal(src.levelsNow.agent, "off");
  const bad = await get("/logging?nope=debug&inbound=loud", src, "POST");
  assert.equal(bad.status, 400);
  assert.match(bad.text, /unknown logger "nope"/);
  assert.match(bad.text, /unknown level "loud"/);
  assert.equal(src.levelsNow.inbound, "trace", "nothing changed on error");
  assert.deepEqual(JSON.parse((await get("/logging?format=json", src)).text).loggers, src.levelsNow);
});

Deno.test("admin: /ready, /quitquitquit needs POST, unknown paths 404", async () => {
  const src = source();
  assert.deepEqual(await get("/ready", src), { status: 200, text: "LIVE\n" });
  assert.deepEqual(await get("/ready", { ...src, state: () => "PRE_INITIALIZING" }), {
    status: 503,
    text: "PRE_INITIALIZING\n",
  });
  assert.equal((await get("/quitquitquit", src)).status, 405);
  assert.equal((await get("/quitquitquit", src, "POST")).status, 200);
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(src.quits, 1);
  assert.equal((await get("/nope", src)).status, 404);
  assert.equal((await get("/stats", src, "DELETE")).status, 405);
});

Deno.test("config_dump: a gateway's PASSTHROUGH server is one tcp_proxy filter chain per TLS route, beside HTTPS", () => {
  const pass = {
    name: "tls.443.https.mygateway.foo",
    port: 443,
    bindPort: 8443,
    gateways: ["foo/mygateway"],
    virtualHosts: [],
    tls: passthroughTls(["nginx.example.com"]),
    tlsRoutes: [{
      name: "foo/nginx.tls.0",
      sniHosts: ["nginx.example.com"],
      destinations: [{ host: "my-nginx.foo.svc.cluster.local", port: 443, weight: 100 }],
    }],
  };
  const https = {
    ...pass,
    name: "https.443.secure.mygateway.foo",
    tls: {
      ...passthroughTls(["secure.example.com"]),
      mode: "SIMPLE" as const,
      credentialName: "kubernetes://c",
    },
    tlsRoutes: undefined,
  };
  const dump = buildConfigDump({ ...BOOTSTRAP, gatewayAddress: "10.1.0.9" }, {
    ...SNAPSHOT,
    routes: { [pass.name]: pass, [https.name]: https },
  }, {});
  // deno-lint-ignore no-explicit-any
  const listeners = (dump.configs[1] as any).dynamic_listeners.map((l: any) => l.active_state.listener);
  const gw = listeners.find((l: { name: string }) => l.name === "10.1.0.9_8443");
  assert.deepEqual(gw.filter_chains.map((c: { filter_chain_match: unknown }) => c.filter_chain_match), [
    { server_names: ["nginx.example.com"] },
    { server_names: ["secure.example.com"] },
  ]);
  const [chain, terminated] = gw.filter_chains;
  assert.equal(chain.transport_socket, undefined, "not terminated");
  assert.equal(chain.route_config_name, undefined);
  assert.deepEqual(chain.filters[0].typed_config.weighted_clusters.clusters, [
    { name: "outbound|443||my-nginx.foo.svc.cluster.local", weight: 100 },
  ]);
  assert.equal(terminated.transport_socket.mode, "SIMPLE");
});
