import assert from "node:assert/strict";
import { buildPushContext, type ConfigResource } from "./push_context.ts";
import { configResource as res } from "./test_support.ts";
import type { RegistrySnapshot } from "./registry_services.ts";

// httpbin.foo: 8000 -> container 8080, 9000 -> container 9090; one WorkloadEntry, one inline endpoint
// (tlsMode label, labels app: inline) and one Kubernetes-registry service to the same WorkloadEntry.
const se = res("ServiceEntry", "foo", "httpbin", {
  hosts: ["httpbin.foo.svc.cluster.local"],
  ports: [
    { name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" },
    { name: "tcp", number: 9000, targetPort: 9090, protocol: "TCP" },
  ],
  location: "MESH_INTERNAL",
  resolution: "STATIC",
  workloadSelector: { labels: { app: "httpbin" } },
  endpoints: [{ address: "10.1.0.9", labels: { app: "inline", "security.istio.io/tlsMode": "istio" } }],
});
const we = res("WorkloadEntry", "foo", "httpbin-1", {
  address: "10.1.0.2",
  labels: { app: "httpbin" },
  serviceAccount: "httpbin",
});
const registry: RegistrySnapshot = {
  workloads: [],
  services: [{
    key: "foo/kube-httpbin",
    name: "kube-httpbin",
    namespace: "foo",
    hosts: ["kube-httpbin.foo.svc.cluster.local"],
    addresses: ["10.96.0.1"],
    ports: [{ name: "http", number: 80, targetPort: 8080, protocol: "HTTP" }],
    endpoints: [{ workload: "foo/httpbin-1", address: "10.1.0.2", ports: { 80: 8080 }, labels: {} }],
  }],
  debug: { registry: "test", clusterID: "c" },
};

const pa = (namespace: string, name: string, spec: Record<string, unknown>) =>
  res("PeerAuthentication", namespace, name, spec);
const app = (label: string) => ({ selector: { matchLabels: { app: label } } });

Deno.test("mtlsDisabledPorts per endpoint: Istio's EDS mtlsChecker over every PeerAuthentication level", () => {
  // [name, policies, WorkloadEntry endpoint, inline endpoint, registry endpoint]
  type Case = [string, ConfigResource[], number[], number[], number[]];
  const cases: Case[] = [
    ["no policy (PERMISSIVE)", [], [], [], []],
    ["mesh STRICT", [pa("mesh-system", "default", { mtls: { mode: "STRICT" } })], [], [], []],
    ["mesh DISABLE", [pa("mesh-system", "default", { mtls: { mode: "DISABLE" } })], [8000, 9000], [
      8000,
      9000,
    ], [
      80,
    ]],
    ["namespace DISABLE", [pa("foo", "default", { mtls: { mode: "DISABLE" } })], [8000, 9000], [8000, 9000], [
      80,
    ]],
    ["other namespace DISABLE", [pa("bar", "default", { mtls: { mode: "DISABLE" } })], [], [], []],
    [
      "workload DISABLE over namespace STRICT",
      [
        pa("foo", "default", { mtls: { mode: "STRICT" } }),
        pa("foo", "httpbin", { ...app("httpbin"), mtls: { mode: "DISABLE" } }),
      ],
      [8000, 9000],
      [],
      [80],
    ],
    [
      "inline endpoint's labels select",
      [pa("foo", "inline", { ...app("inline"), mtls: { mode: "DISABLE" } })],
      [],
      [
        8000,
        9000,
      ],
      [],
    ],
    [
      "port-level DISABLE on container 8080 only",
      [pa("foo", "httpbin", {
        ...app("httpbin"),
        mtls: { mode: "STRICT" },
        portLevelMtls: { "8080": { mode: "DISABLE" } },
      })],
      [8000],
      [],
      [80],
    ],
    [
      "port-level STRICT under namespace DISABLE",
      [
        pa("foo", "default", { mtls: { mode: "DISABLE" } }),
        pa("foo", "httpbin", { ...app("httpbin"), portLevelMtls: { "9090": { mode: "STRICT" } } }),
      ],
      [8000],
      [8000, 9000],
      [80],
    ],
  ];
  for (const [name, policies, wantWe, wantInline, wantRegistry] of cases) {
    const ctx = buildPushContext([se, we, ...policies], { version: "1", registry });
    const eps = new Map(ctx.services.flatMap((s) => s.endpoints.map((e) => [`${s.name} ${e.address}`, e])));
    assert.deepEqual(eps.get("httpbin 10.1.0.2")?.mtlsDisabledPorts, wantWe, `${name}: WorkloadEntry`);
    assert.deepEqual(eps.get("httpbin 10.1.0.9")?.mtlsDisabledPorts, wantInline, `${name}: inline`);
    assert.deepEqual(eps.get("kube-httpbin 10.1.0.2")?.mtlsDisabledPorts, wantRegistry, `${name}: registry`);
  }
});

Deno.test("mtlsDisabledPorts does not depend on whether the workload is proxied (connect-only changes keep it)", () => {
  const disable = pa("foo", "httpbin", { ...app("httpbin"), mtls: { mode: "DISABLE" } });
  const of = (connected: Set<string>) =>
    buildPushContext([se, we, disable], { version: "1", connected }).services[0].endpoints[0];
  assert.equal(of(new Set()).proxied, false);
  assert.equal(of(new Set(["foo/httpbin-1"])).proxied, true);
  assert.deepEqual(of(new Set()).mtlsDisabledPorts, of(new Set(["foo/httpbin-1"])).mtlsDisabledPorts);
});
