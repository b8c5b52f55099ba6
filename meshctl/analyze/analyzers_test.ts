import assert from "node:assert/strict";
import { runAnalysis } from "./command.ts";
import { inputFromFiles } from "./input.ts";
import type { AnalysisMessage } from "./analyzers.ts";
import { render } from "./messages.ts";

const BASE = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: [httpbin.foo.svc.cluster.local]
  ports: [{name: http, number: 8000, targetPort: 8080, protocol: HTTP}, {name: db, number: 5432, protocol: TCP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: 10.1.0.2, labels: {app: httpbin}, serviceAccount: httpbin}
---
apiVersion: v1
kind: Namespace
metadata: {name: bar}
`;

/** The messages the analyzers report for BASE plus `extra`. */
async function messages(extra: string, analyzers: string[] = []): Promise<AnalysisMessage[]> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/config.yaml`, BASE + "---\n" + extra);
    const input = await inputFromFiles([dir], { rootNamespace: "mesh-system" });
    return runAnalysis(input, { analyzers });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The codes (with resource) the analyzers report for BASE plus `extra`. */
async function codes(extra: string, analyzers: string[] = []): Promise<string[]> {
  return (await messages(extra, analyzers)).map((m) =>
    `${m.type.code} ${m.resource ? `${m.resource.kind} ${m.resource.namespace}/${m.resource.name}` : "-"}`
  );
}

const ap = (name: string, spec: string, namespace = "foo") =>
  `apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec: ${spec}\n`;
const pa = (name: string, spec: string, namespace = "foo", created?: string) =>
  `apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: ${name}, namespace: ${namespace}${
    created ? `, creationTimestamp: "${created}"` : ""
  }}\nspec: ${spec}\n`;
const ra = (name: string, spec: string, namespace = "foo") =>
  `apiVersion: security.istio.io/v1\nkind: RequestAuthentication\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec: ${spec}\n`;

const CASES: { name: string; yaml: string; want: string[] }[] = [
  { name: "nothing wrong", yaml: ap("ok", "{selector: {matchLabels: {app: httpbin}}}"), want: [] },
  {
    name: "IST0127: AuthorizationPolicy selects no workload",
    yaml: ap("nobody", "{selector: {matchLabels: {app: nope}}}"),
    want: ["IST0127 AuthorizationPolicy foo/nobody"],
  },
  {
    name: "IST0127: namespace-wide AuthorizationPolicy in a namespace without workloads",
    yaml: ap("empty", "{}", "bar"),
    want: ["IST0127 AuthorizationPolicy bar/empty"],
  },
  {
    name: "a root-namespace selector matches workloads of every namespace",
    yaml: ap("root", "{selector: {matchLabels: {app: httpbin}}}", "mesh-system"),
    want: [],
  },
  {
    name: "IST0101: source namespace not found; globs and declared namespaces are fine",
    yaml: ap("ns", "{rules: [{from: [{source: {namespaces: [baz, bar, 'fo*', '*']}}]}]}"),
    want: ["IST0101 AuthorizationPolicy foo/ns"],
  },
  {
    name: "IST0127: RequestAuthentication selects no workload; IST0175 for its jwksUri",
    yaml: ra(
      "jwt",
      "{selector: {matchLabels: {app: nope}}, jwtRules: [{issuer: a, jwksUri: 'https://a/keys'}]}",
    ),
    want: ["IST0127 RequestAuthentication foo/jwt", "IST0175 -"],
  },
  {
    // Validation warns too (IST0122, offline only): meshd's live config has no validation warnings.
    name: "IST0166: PeerAuthentication with a selector in the root namespace",
    yaml: pa("root-sel", "{selector: {matchLabels: {app: httpbin}}, mtls: {mode: STRICT}}", "mesh-system"),
    want: [
      "IST0166 PeerAuthentication mesh-system/root-sel",
      "IST0122 PeerAuthentication mesh-system/root-sel",
    ],
  },
  {
    name: "IST0167: a newer namespace-wide PeerAuthentication is shadowed by the older one",
    yaml: pa("old", "{mtls: {mode: STRICT}}", "foo", "2024-01-01T00:00:00Z") + "---\n" +
      pa("new", "{mtls: {mode: DISABLE}}", "foo", "2025-01-01T00:00:00Z"),
    want: ["IST0167 PeerAuthentication foo/new"],
  },
  {
    name: "IST0167: mode UNSET without portLevelMtls only inherits",
    yaml: pa("unset", "{selector: {matchLabels: {app: httpbin}}, mtls: {mode: UNSET}}"),
    want: ["IST0167 PeerAuthentication foo/unset"],
  },
  {
    name: "MESH0001: portLevelMtls on a port no service targets; the bound ports are fine",
    yaml: pa(
      "ports",
      "{selector: {matchLabels: {app: httpbin}}, mtls: {mode: STRICT}, portLevelMtls: {8080: {mode: DISABLE}, 5432: {mode: DISABLE}, 9000: {mode: DISABLE}}}",
    ),
    want: ["MESH0001 PeerAuthentication foo/ports"],
  },
  {
    name: "MESH0002: HTTP-only fields in a rule that applies to a TCP port",
    yaml: ap(
      "tcp",
      "{selector: {matchLabels: {app: httpbin}}, rules: [{to: [{operation: {methods: [GET]}}]}]}",
    ),
    want: ["MESH0002 AuthorizationPolicy foo/tcp"],
  },
  {
    name: "MESH0002 not when the rule names only HTTP ports",
    yaml: ap(
      "http-only",
      "{selector: {matchLabels: {app: httpbin}}, rules: [{to: [{operation: {methods: [GET], ports: ['8080']}}]}]}",
    ),
    want: [],
  },
  {
    name: "IST0101: VirtualService names a missing gateway",
    yaml: `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: vs, namespace: foo}
spec:
  hosts: [httpbin.foo.svc.cluster.local]
  gateways: [mesh, missing]
  http: [{route: [{destination: {host: httpbin.foo.svc.cluster.local}}]}]
`,
    want: ["IST0101 VirtualService foo/vs"],
  },
  {
    name: "IST0127: ServiceEntry workloadSelector matches no WorkloadEntry",
    yaml: `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: lonely, namespace: foo}
spec:
  hosts: [lonely.foo.svc.cluster.local]
  ports: [{name: http, number: 80, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: lonely}}
`,
    want: ["IST0127 ServiceEntry foo/lonely"],
  },
  {
    name: "IST0106: a schema error, located",
    yaml: pa("bad", "{mtls: {mode: STRICTT}}"),
    want: ["IST0106 PeerAuthentication foo/bad"],
  },
];

for (const c of CASES) {
  Deno.test(`analyzers: ${c.name}`, async () => {
    assert.deepEqual((await codes(c.yaml)).sort(), [...c.want].sort());
  });
}

Deno.test("runAnalysis: --analyzer runs only the named analyzers; an unknown name is an error", async () => {
  const yaml = ap("nobody", "{selector: {matchLabels: {app: nope}}}") + "---\n" +
    ra(
      "jwt",
      "{selector: {matchLabels: {app: httpbin}}, jwtRules: [{issuer: a, jwksUri: 'https://a/keys'}]}",
    );
  assert.deepEqual(await codes(yaml, ["authn.BlockedCIDRsAnalyzer"]), ["IST0175 -"]);
  await assert.rejects(codes(yaml, ["nope.Analyzer"]), /--analyzer: unknown analyzer "nope.Analyzer"/);
});

/** [label, extra YAML, the MESH0002 texts (after "rule ")]. */
const TCP_CASES: [string, string, RegExp[]][] = [
  [
    "ALLOW with methods on the TCP port: dropped",
    ap(
      "allow-get",
      "{selector: {matchLabels: {app: httpbin}}, rules: [{to: [{operation: {methods: [GET]}}]}]}",
    ),
    [/^rule 0 uses HTTP-only fields \(to\[0\]\.operation\.methods\) but applies to TCP port 5432 of foo\/httpbin-1 \(foo\/httpbin port 5432 is TCP\): an ALLOW rule with HTTP-only fields is dropped on TCP/],
  ],
  [
    "DENY with methods on the TCP port: the HTTP-only fields are ignored",
    ap(
      "deny-get",
      "{selector: {matchLabels: {app: httpbin}}, action: DENY, rules: [{to: [{operation: {methods: [GET]}}]}]}",
    ),
    [/port 5432 .*: the HTTP-only fields are ignored on TCP, so this DENY rule matches every connection its other fields match$/],
  ],
  [
    "AUDIT likewise ignored",
    ap(
      "audit",
      "{selector: {matchLabels: {app: httpbin}}, action: AUDIT, rules: [{to: [{operation: {paths: [/x]}}]}]}",
    ),
    [/this AUDIT rule matches every connection/],
  ],
  [
    "requestPrincipals and a request.* condition",
    ap(
      "jwt",
      "{selector: {matchLabels: {app: httpbin}}, rules: [{from: [{source: {requestPrincipals: ['*']}}], when: [{key: 'request.auth.claims[group]', values: [a]}]}]}",
    ),
    [/HTTP-only fields \(from\[0\]\.source\.requestPrincipals, when\[0\] request\.auth\.claims\[group\]\)/],
  ],
  [
    "L4 fields only: nothing",
    ap(
      "l4",
      "{selector: {matchLabels: {app: httpbin}}, rules: [{from: [{source: {namespaces: [foo], ipBlocks: [10.0.0.0/8]}}], to: [{operation: {ports: ['5432']}}], when: [{key: source.ip, values: [10.0.0.1]}]}]}",
    ),
    [],
  ],
  [
    "an empty methods list is not set: nothing",
    ap("empty", "{selector: {matchLabels: {app: httpbin}}, rules: [{to: [{operation: {methods: []}}]}]}"),
    [],
  ],
  [
    "one operation without ports makes the rule apply to every port",
    ap(
      "two-ops",
      "{selector: {matchLabels: {app: httpbin}}, rules: [{to: [{operation: {methods: [GET], ports: ['8080']}}, {operation: {paths: [/x]}}]}]}",
    ),
    [/TCP port 5432/],
  ],
  [
    "a port without protocol (auto-detect) counts as TCP",
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: auto, namespace: foo}
spec:
  hosts: [auto.foo.svc.cluster.local]
  ports: [{name: web, number: 7000}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
` +
    ap(
      "allow-get",
      "{selector: {matchLabels: {app: httpbin}}, rules: [{to: [{operation: {methods: [GET], ports: ['7000']}}]}]}",
    ),
    [/TCP port 7000 of foo\/httpbin-1 \(foo\/auto port 7000 is UNKNOWN\)/],
  ],
];

for (const [label, yaml, want] of TCP_CASES) {
  Deno.test(`analyzers: MESH0002 ${label}`, async () => {
    const got = (await messages(yaml, ["auth.TcpHttpFieldsAnalyzer"])).map((m) =>
      render(m.type.template, m.params)
    );
    assert.equal(got.length, want.length, got.join("\n"));
    want.forEach((re, i) => assert.match(got[i], re));
  });
}
