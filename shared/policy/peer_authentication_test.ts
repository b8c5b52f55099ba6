import assert from "node:assert/strict";
import { effectivePeerAuthentication } from "./mod.ts";
import {
  explain,
  HTTPBIN,
  pa,
  type PeerAuthenticationCase,
  ROOT,
  SLEEP,
  testPeerAuthenticationCases,
} from "./_test_support.ts";

const CASES: PeerAuthenticationCase[] = [
  // No policy at all.
  { name: "no policy is PERMISSIVE", policies: [], want: "PERMISSIVE by default" },

  // Seed, Observable effects, row 1: STRICT in the root namespace without selector.
  {
    name: "seed: mesh-wide STRICT applies in foo",
    policies: [pa(ROOT, "default", { mode: "STRICT" })],
    want: "STRICT by mesh mesh-system/default",
  },
  {
    name: "seed: mesh-wide STRICT applies in any other namespace",
    policies: [pa(ROOT, "default", { mode: "STRICT" })],
    namespace: "bar",
    labels: SLEEP,
    want: "STRICT by mesh mesh-system/default",
  },
  {
    name: "mesh-wide policy applies to workloads of the root namespace too",
    policies: [pa(ROOT, "default", { mode: "STRICT" })],
    namespace: ROOT,
    want: "STRICT by mesh mesh-system/default",
  },

  // Seed row 2: STRICT in namespace N without selector.
  {
    name: "seed: namespace STRICT applies in its namespace",
    policies: [pa("foo", "default", { mode: "STRICT" })],
    want: "STRICT by namespace foo/default",
  },
  {
    name: "seed: namespace STRICT does not apply in another namespace",
    policies: [pa("foo", "default", { mode: "STRICT" })],
    namespace: "bar",
    want: "PERMISSIVE by default",
  },

  // Seed row 3: STRICT with selector.
  {
    name: "seed: selector STRICT applies to a matching workload",
    policies: [pa("foo", "httpbin", { mode: "STRICT", labels: { app: "httpbin" } })],
    want: "STRICT by workload foo/httpbin",
  },
  {
    name: "seed: selector STRICT does not apply to a non-matching workload",
    policies: [pa("foo", "httpbin", { mode: "STRICT", labels: { app: "httpbin" } })],
    labels: SLEEP,
    want: "PERMISSIVE by default",
  },
  {
    name: "selector needs every label (matchLabels must be a subset of the workload's labels)",
    policies: [pa("foo", "httpbin", { mode: "STRICT", labels: { app: "httpbin", version: "v2" } })],
    want: "PERMISSIVE by default",
  },
  {
    name: "selector matches a workload carrying more labels than it names",
    policies: [pa("foo", "httpbin", { mode: "STRICT", labels: { version: "v1" } })],
    want: "STRICT by workload foo/httpbin",
  },
  {
    name: "selector STRICT in another namespace does not apply to a matching workload here",
    policies: [pa("bar", "httpbin", { mode: "STRICT", labels: { app: "httpbin" } })],
    want: "PERMISSIVE by default",
  },

  // Seed row 4: workload DISABLE beats namespace STRICT.
  {
    name: "seed: workload DISABLE overrides namespace STRICT for the matching workload",
    policies: [
      pa("foo", "default", { mode: "STRICT" }),
      pa("foo", "httpbin", { mode: "DISABLE", labels: { app: "httpbin" } }),
    ],
    want: "DISABLE by workload foo/httpbin",
  },
  {
    name: "seed: workload DISABLE leaves namespace STRICT for other workloads",
    policies: [
      pa("foo", "default", { mode: "STRICT" }),
      pa("foo", "httpbin", { mode: "DISABLE", labels: { app: "httpbin" } }),
    ],
    labels: SLEEP,
    want: "STRICT by namespace foo/default",
  },
  {
    name: "workload DISABLE overrides mesh STRICT",
    policies: [
      pa(ROOT, "default", { mode: "STRICT" }),
      pa("foo", "httpbin", { mode: "DISABLE", labels: { app: "httpbin" } }),
    ],
    want: "DISABLE by workload foo/httpbin",
  },
  {
    name: "namespace DISABLE overrides mesh STRICT",
    policies: [pa(ROOT, "default", { mode: "STRICT" }), pa("foo", "default", { mode: "DISABLE" })],
    want: "DISABLE by namespace foo/default",
  },
  {
    name: "explicit PERMISSIVE at namespace scope overrides mesh STRICT",
    policies: [pa(ROOT, "default", { mode: "STRICT" }), pa("foo", "default", { mode: "PERMISSIVE" })],
    want: "PERMISSIVE by namespace foo/default",
  },
  {
    name: "explicit PERMISSIVE at workload scope overrides namespace STRICT",
    policies: [
      pa("foo", "default", { mode: "STRICT" }),
      pa("foo", "httpbin", { mode: "PERMISSIVE", labels: { app: "httpbin" } }),
    ],
    want: "PERMISSIVE by workload foo/httpbin",
  },
  {
    name: "explicit mesh-wide PERMISSIVE is reported as the mesh policy, not the default",
    policies: [pa(ROOT, "default", { mode: "PERMISSIVE" })],
    want: "PERMISSIVE by mesh mesh-system/default",
  },

  // Seed row 5: STRICT with portLevelMtls DISABLE.
  {
    name: "seed: portLevelMtls DISABLE applies to that port when bound to a service",
    policies: [
      pa("foo", "httpbin", { mode: "STRICT", labels: { app: "httpbin" }, ports: { "8080": "DISABLE" } }),
    ],
    port: 8080,
    want: "DISABLE by port foo/httpbin",
  },
  {
    name: "seed: other ports keep the workload STRICT",
    policies: [
      pa("foo", "httpbin", { mode: "STRICT", labels: { app: "httpbin" }, ports: { "8080": "DISABLE" } }),
    ],
    port: 8000,
    want: "STRICT by workload foo/httpbin",
  },
  {
    name: "seed: portLevelMtls is ignored on a port not bound to a service",
    policies: [
      pa("foo", "httpbin", { mode: "STRICT", labels: { app: "httpbin" }, ports: { "8080": "DISABLE" } }),
    ],
    port: 8080,
    bound: false,
    want: "STRICT by workload foo/httpbin",
  },
  {
    name: "portLevelMtls STRICT tightens a namespace PERMISSIVE on that port",
    policies: [
      pa("foo", "default", { mode: "PERMISSIVE" }),
      pa("foo", "httpbin", { labels: { app: "httpbin" }, ports: { "8080": "STRICT" } }),
    ],
    port: 8080,
    want: "STRICT by port foo/httpbin",
  },
  {
    name: "portLevelMtls key with a leading zero still names the port, as Istio's uint32 keys",
    policies: [
      pa("foo", "httpbin", { mode: "STRICT", labels: { app: "httpbin" }, ports: { "08080": "DISABLE" } }),
    ],
    port: 8080,
    want: "DISABLE by port foo/httpbin",
  },

  // Policies that never apply.
  {
    name: "a selector policy in the root namespace is ignored for matching workloads elsewhere",
    policies: [pa(ROOT, "httpbin", { mode: "STRICT", labels: { app: "httpbin" } })],
    want: "PERMISSIVE by default",
  },
  {
    name: "a selector policy in the root namespace is ignored for its own workloads too",
    policies: [
      pa(ROOT, "default", { mode: "DISABLE" }),
      pa(ROOT, "httpbin", { mode: "STRICT", labels: { app: "httpbin" }, ports: { "8000": "STRICT" } }),
    ],
    namespace: ROOT,
    want: "DISABLE by mesh mesh-system/default",
  },
  {
    name: "a namespace-wide policy in another namespace is ignored",
    policies: [pa(ROOT, "default", { mode: "STRICT" }), pa("bar", "default", { mode: "DISABLE" })],
    want: "STRICT by mesh mesh-system/default",
  },
  {
    name: "an empty matchLabels in the root namespace is mesh-wide",
    policies: [pa(ROOT, "default", { mode: "STRICT", labels: {} })],
    namespace: "bar",
    want: "STRICT by mesh mesh-system/default",
  },
  {
    name: "an empty matchLabels in a namespace is namespace-wide",
    policies: [pa("foo", "default", { mode: "STRICT", labels: {} })],
    labels: {},
    want: "STRICT by namespace foo/default",
  },

  // Root namespace and metadata defaults.
  {
    name: "a custom root namespace makes its policies mesh-wide and mesh-system an ordinary namespace",
    policies: [pa("istio-system", "default", { mode: "STRICT" }), pa(ROOT, "default", { mode: "DISABLE" })],
    rootNamespace: "istio-system",
    want: "STRICT by mesh istio-system/default",
  },
  {
    name: "a policy without metadata.namespace belongs to the default namespace",
    policies: [{ metadata: { name: "x" }, spec: { mtls: { mode: "STRICT" } } }],
    namespace: "default",
    want: "STRICT by namespace default/x",
  },
  {
    name: "a policy without metadata.namespace does not apply to other namespaces",
    policies: [{ metadata: { name: "x" }, spec: { mtls: { mode: "STRICT" } } }],
    want: "PERMISSIVE by default",
  },
];

testPeerAuthenticationCases(CASES);

Deno.test("effectivePeerAuthentication: selected names the chosen policy of each scope, UNSET included", () => {
  const r = effectivePeerAuthentication({
    namespace: "foo",
    labels: HTTPBIN,
    port: 8000,
    portBoundToService: true,
    policies: [
      pa(ROOT, "mesh", { mode: "STRICT" }),
      pa("foo", "ns", { mode: "UNSET" }),
      pa("foo", "wl", { labels: { app: "httpbin" } }),
      pa("foo", "other", { labels: { app: "sleep" }, mode: "DISABLE" }),
    ],
  });
  assert.deepEqual(r, {
    mode: "STRICT",
    decidedBy: { scope: "mesh", policy: { namespace: ROOT, name: "mesh" } },
    selected: {
      mesh: { namespace: ROOT, name: "mesh" },
      namespace: { namespace: "foo", name: "ns" },
      workload: { namespace: "foo", name: "wl" },
    },
  });
  const none = effectivePeerAuthentication({
    namespace: "foo",
    port: 1,
    portBoundToService: false,
    policies: [],
  });
  assert.deepEqual(none, { mode: "PERMISSIVE", decidedBy: { scope: "default" }, selected: {} });
});

Deno.test("effectivePeerAuthentication: labels default to none, so only selector-less policies apply", () => {
  const r = effectivePeerAuthentication({
    namespace: "foo",
    port: 8000,
    portBoundToService: true,
    policies: [
      pa("foo", "default", { mode: "STRICT" }),
      pa("foo", "wl", { mode: "DISABLE", labels: { a: "b" } }),
    ],
  });
  assert.equal(explain(r), "STRICT by namespace foo/default");
});

Deno.test("effectivePeerAuthentication: a selector key inherited from Object.prototype does not match", () => {
  const r = effectivePeerAuthentication({
    namespace: "foo",
    labels: {},
    port: 8000,
    portBoundToService: true,
    policies: [pa("foo", "wl", { mode: "STRICT", labels: { toString: "x" } })],
  });
  assert.equal(r.mode, "PERMISSIVE");
});
