import assert from "node:assert/strict";
import type { Static } from "@sinclair/typebox";
import type { MTLS_MODES, peerAuthentication } from "../api/schemas/peer_authentication.ts";
import {
  type EffectivePeerAuthentication,
  effectivePeerAuthentication,
  type EffectivePeerAuthenticationOptions,
  type MtlsMode,
  type PeerAuthenticationPolicy,
} from "./mod.ts";

const ROOT = "mesh-system";

interface PolicyOptions {
  mode?: MtlsMode;
  labels?: Record<string, string>;
  ports?: Record<string, MtlsMode | undefined>;
  ts?: string;
}

/** A policy `name` in `namespace`; omitted fields stay omitted, so missing-field cases are real. */
function pa(namespace: string, name: string, o: PolicyOptions = {}): PeerAuthenticationPolicy {
  const spec: NonNullable<PeerAuthenticationPolicy["spec"]> = {};
  if (o.labels) spec.selector = { matchLabels: o.labels };
  if (o.mode) spec.mtls = { mode: o.mode };
  if (o.ports) {
    spec.portLevelMtls = Object.fromEntries(
      Object.entries(o.ports).map(([port, mode]) => [port, mode === undefined ? {} : { mode }]),
    );
  }
  return {
    metadata: { name, namespace, ...(o.ts ? { creationTimestamp: o.ts } : {}) },
    spec,
  };
}

const HTTPBIN = { app: "httpbin", version: "v1" };
const SLEEP = { app: "sleep" };

/** "<mode> by <scope>[ <namespace>/<name>]": compact enough for one table row per case. */
function explain(r: EffectivePeerAuthentication): string {
  const d = r.decidedBy;
  return d.scope === "default"
    ? `${r.mode} by default`
    : `${r.mode} by ${d.scope} ${d.policy.namespace}/${d.policy.name}`;
}

interface Case {
  name: string;
  policies: PeerAuthenticationPolicy[];
  /** Workload namespace; default "foo". */
  namespace?: string;
  /** Workload labels; default HTTPBIN. */
  labels?: Record<string, string>;
  /** Port; default 8000 (the seed's echo service port). */
  port?: number;
  /** Default true. */
  bound?: boolean;
  rootNamespace?: string;
  want: string;
}

const CASES: Case[] = [
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

for (const c of CASES) {
  Deno.test(`effectivePeerAuthentication: ${c.name}`, () => {
    const options: EffectivePeerAuthenticationOptions = {
      namespace: c.namespace ?? "foo",
      labels: c.labels ?? HTTPBIN,
      port: c.port ?? 8000,
      portBoundToService: c.bound ?? true,
      policies: c.policies,
      ...(c.rootNamespace ? { rootNamespace: c.rootNamespace } : {}),
    };
    assert.equal(explain(effectivePeerAuthentication(options)), c.want);
    // Input order must not matter: Istio sorts before composing.
    const reversed = effectivePeerAuthentication({ ...options, policies: [...c.policies].reverse() });
    assert.equal(explain(reversed), c.want);
  });
}

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

const ERRORS: { name: string; options: Partial<EffectivePeerAuthenticationOptions>; message: RegExp }[] = [
  { name: "port 0", options: { port: 0 }, message: /port must be an integer in 1\.\.65535, got 0/ },
  { name: "port 65536", options: { port: 65536 }, message: /got 65536/ },
  { name: "fractional port", options: { port: 80.5 }, message: /got 80\.5/ },
  {
    name: "non-RFC 3339 timestamp on an applicable policy, even without rivals",
    options: { policies: [pa("foo", "x", { mode: "STRICT", ts: "yesterday" })] },
    message: /foo\/x: creationTimestamp "yesterday" is not an RFC 3339 time/,
  },
  {
    name: "impossible date",
    options: { policies: [pa("foo", "x", { mode: "STRICT", ts: "2024-13-01T00:00:00Z" })] },
    message: /"2024-13-01T00:00:00Z"/,
  },
  {
    name: "unknown workload mode",
    options: { policies: [pa("foo", "x", { mode: "STRIKT" as MtlsMode })] },
    message: /foo\/x: mtls\.mode "STRIKT" is not UNSET, DISABLE, PERMISSIVE or STRICT/,
  },
  {
    name: "unknown port mode on a bound port",
    options: {
      port: 8080,
      policies: [pa("foo", "x", { labels: { app: "httpbin" }, ports: { "8080": "off" as MtlsMode } })],
    },
    message: /portLevelMtls\[8080\]\.mode "off"/,
  },
];

for (const e of ERRORS) {
  Deno.test(`effectivePeerAuthentication throws RangeError: ${e.name}`, () => {
    assert.throws(
      () =>
        effectivePeerAuthentication({
          namespace: "foo",
          labels: HTTPBIN,
          port: 8000,
          portBoundToService: true,
          policies: [],
          ...e.options,
        }),
      (err: unknown) => err instanceof RangeError && e.message.test(err.message),
    );
  });
}

Deno.test("effectivePeerAuthentication: bad data in policies that do not apply is not examined", () => {
  const r = effectivePeerAuthentication({
    namespace: "foo",
    labels: HTTPBIN,
    port: 8000,
    portBoundToService: true,
    policies: [
      pa("bar", "elsewhere", { mode: "BOGUS" as MtlsMode, ts: "never" }),
      pa("foo", "sleep", { mode: "STRICT", labels: { app: "sleep" }, ts: "never" }),
    ],
  });
  assert.equal(explain(r), "PERMISSIVE by default");
});

Deno.test("PeerAuthenticationPolicy accepts any object of the PeerAuthentication schema's type", () => {
  type SchemaPeerAuthentication = Static<typeof peerAuthentication.schema>;
  const fromSchema: SchemaPeerAuthentication = {
    apiVersion: "security.mesh.io/v1",
    kind: "PeerAuthentication",
    metadata: { name: "httpbin", namespace: "foo", creationTimestamp: "2024-01-01T00:00:00Z" },
    spec: {
      selector: { matchLabels: { app: "httpbin" } },
      mtls: { mode: "STRICT" },
      portLevelMtls: { "8080": { mode: "DISABLE" } },
    },
  };
  const policies: PeerAuthenticationPolicy[] = [fromSchema];
  const r = effectivePeerAuthentication({
    namespace: "foo",
    labels: HTTPBIN,
    port: 8080,
    portBoundToService: true,
    policies,
  });
  assert.equal(explain(r), "DISABLE by port foo/httpbin");
});

Deno.test("MtlsMode is exactly the schema's MTLS_MODES", () => {
  type SchemaMode = (typeof MTLS_MODES)[number];
  const forward: SchemaMode[] = [] as MtlsMode[];
  const backward: MtlsMode[] = [] as SchemaMode[];
  assert.deepEqual([forward, backward], [[], []]);
});
