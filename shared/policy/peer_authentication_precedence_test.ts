import { pa, type PeerAuthenticationCase, ROOT, testPeerAuthenticationCases } from "./_test_support.ts";

/** Precedence within and across scopes: UNSET inheritance and the oldest policy of a scope. */
const CASES: PeerAuthenticationCase[] = [
  // UNSET inherits from the next wider scope.
  {
    name: "UNSET mesh policy leaves the default",
    policies: [pa(ROOT, "default", { mode: "UNSET" })],
    want: "PERMISSIVE by default",
  },
  {
    name: "mesh policy without mtls leaves the default",
    policies: [pa(ROOT, "default")],
    want: "PERMISSIVE by default",
  },
  {
    name: "UNSET namespace policy inherits mesh STRICT",
    policies: [pa(ROOT, "default", { mode: "STRICT" }), pa("foo", "default", { mode: "UNSET" })],
    want: "STRICT by mesh mesh-system/default",
  },
  {
    name: "namespace policy without mtls inherits mesh STRICT",
    policies: [pa(ROOT, "default", { mode: "STRICT" }), pa("foo", "default")],
    want: "STRICT by mesh mesh-system/default",
  },
  {
    name: "namespace policy with mtls but no mode inherits mesh STRICT",
    policies: [
      pa(ROOT, "default", { mode: "STRICT" }),
      { metadata: { name: "default", namespace: "foo" }, spec: { mtls: {} } },
    ],
    want: "STRICT by mesh mesh-system/default",
  },
  {
    name: "namespace policy without spec inherits mesh STRICT",
    policies: [pa(ROOT, "default", { mode: "STRICT" }), { metadata: { name: "default", namespace: "foo" } }],
    want: "STRICT by mesh mesh-system/default",
  },
  {
    name: "UNSET workload policy inherits namespace DISABLE",
    policies: [
      pa(ROOT, "default", { mode: "STRICT" }),
      pa("foo", "default", { mode: "DISABLE" }),
      pa("foo", "httpbin", { mode: "UNSET", labels: { app: "httpbin" } }),
    ],
    want: "DISABLE by namespace foo/default",
  },
  {
    name: "UNSET workload and namespace policies inherit mesh STRICT",
    policies: [
      pa(ROOT, "default", { mode: "STRICT" }),
      pa("foo", "default", { mode: "UNSET" }),
      pa("foo", "httpbin", { labels: { app: "httpbin" } }),
    ],
    want: "STRICT by mesh mesh-system/default",
  },
  {
    name: "UNSET port inherits the workload mode",
    policies: [
      pa("foo", "httpbin", { mode: "DISABLE", labels: { app: "httpbin" }, ports: { "8080": "UNSET" } }),
    ],
    port: 8080,
    want: "DISABLE by workload foo/httpbin",
  },
  {
    name: "port without mode inherits the workload mode",
    policies: [
      pa("foo", "httpbin", { mode: "DISABLE", labels: { app: "httpbin" }, ports: { "8080": undefined } }),
    ],
    port: 8080,
    want: "DISABLE by workload foo/httpbin",
  },
  {
    name: "UNSET port under an UNSET workload inherits the namespace mode",
    policies: [
      pa("foo", "default", { mode: "STRICT" }),
      pa("foo", "httpbin", { mode: "UNSET", labels: { app: "httpbin" }, ports: { "8080": "UNSET" } }),
    ],
    port: 8080,
    want: "STRICT by namespace foo/default",
  },

  // Oldest wins within a scope.
  {
    name: "mesh scope: the oldest policy wins",
    policies: [
      pa(ROOT, "newer", { mode: "STRICT", ts: "2024-02-01T00:00:00Z" }),
      pa(ROOT, "older", { mode: "DISABLE", ts: "2024-01-01T00:00:00Z" }),
    ],
    want: "DISABLE by mesh mesh-system/older",
  },
  {
    name: "namespace scope: the oldest policy wins",
    policies: [
      pa("foo", "older", { mode: "STRICT", ts: "2024-01-01T00:00:00Z" }),
      pa("foo", "newer", { mode: "DISABLE", ts: "2024-01-01T00:00:01Z" }),
    ],
    want: "STRICT by namespace foo/older",
  },
  {
    name: "workload scope: the oldest matching policy wins over newer ones",
    policies: [
      pa("foo", "newer", { mode: "DISABLE", labels: { app: "httpbin" }, ts: "2024-03-01T00:00:00Z" }),
      pa("foo", "older", { mode: "STRICT", labels: { version: "v1" }, ts: "2024-01-01T00:00:00Z" }),
      pa("foo", "newest", {
        mode: "DISABLE",
        labels: { app: "httpbin" },
        ports: { "8000": "DISABLE" },
        ts: "2024-04-01T00:00:00Z",
      }),
    ],
    want: "STRICT by workload foo/older",
  },
  {
    name: "workload scope: portLevelMtls of a newer workload policy is ignored",
    policies: [
      pa("foo", "older", { mode: "STRICT", labels: { app: "httpbin" }, ts: "2024-01-01T00:00:00Z" }),
      pa("foo", "newer", {
        labels: { app: "httpbin" },
        ports: { "8000": "DISABLE" },
        ts: "2024-02-01T00:00:00Z",
      }),
    ],
    want: "STRICT by workload foo/older",
  },
  {
    name: "the oldest policy is chosen even when UNSET; a newer explicit one does not fill in",
    policies: [
      pa(ROOT, "mesh", { mode: "STRICT" }),
      pa("foo", "older", { mode: "UNSET", ts: "2024-01-01T00:00:00Z" }),
      pa("foo", "newer", { mode: "DISABLE", ts: "2024-02-01T00:00:00Z" }),
    ],
    want: "STRICT by mesh mesh-system/mesh",
  },
  {
    name: "timestamps compare as times, not strings (offsets)",
    policies: [
      pa("foo", "a", { mode: "STRICT", ts: "2024-01-01T01:00:00+02:00" }), // 2023-12-31T23:00Z
      pa("foo", "b", { mode: "DISABLE", ts: "2024-01-01T00:00:00Z" }),
    ],
    want: "STRICT by namespace foo/a",
  },
  {
    name: "a missing creationTimestamp counts as the oldest (Go's zero time in Istio)",
    policies: [
      pa("foo", "stamped", { mode: "STRICT", ts: "1970-01-01T00:00:00Z" }),
      pa("foo", "unstamped", { mode: "DISABLE" }),
    ],
    want: "DISABLE by namespace foo/unstamped",
  },
  {
    name: "equal timestamps: the first name wins",
    policies: [
      pa("foo", "b", { mode: "STRICT", ts: "2024-01-01T00:00:00Z" }),
      pa("foo", "a", { mode: "DISABLE", ts: "2024-01-01T00:00:00Z" }),
    ],
    want: "DISABLE by namespace foo/a",
  },
  {
    name: "both timestamps missing: the first name wins, whatever the input order",
    policies: [pa(ROOT, "zeta", { mode: "STRICT" }), pa(ROOT, "alpha", { mode: "DISABLE" })],
    want: "DISABLE by mesh mesh-system/alpha",
  },
];

testPeerAuthenticationCases(CASES);
