/**
 * Table-driven tests of the keyed store (meshd issue, "2. Config store"): last-good versions,
 * conflicts between files, and which keys each step adds, updates or removes.
 */
import assert from "node:assert/strict";
import type { MeshResource, ValidationIssue, ValidationResult, ValidResource } from "../../shared/mod.ts";
import { type IndexChanges, ResourceIndex, resourceKey } from "./resource_index.ts";

/** A valid document: `Kind/namespace/name` (empty namespace: none given), a marker `v` put in the spec. */
interface Doc {
  key: string;
  v?: string;
  /** Default: its position in the file. */
  doc?: number;
  apiVersion?: string;
  spec?: Record<string, unknown>;
}

/** An error issue: `doc` undefined is a file-level error. */
interface Err {
  doc?: number;
  resource?: string;
  message?: string;
}

/** One file's new state; `undefined` deletes the file. */
type FileState = { docs: Doc[]; errors?: Err[] } | undefined;

interface Case {
  name: string;
  steps: [file: string, state: FileState][];
  /** Resources in force after the last step: key → `file#v`. */
  inForce: Record<string, string>;
  /** Changes of the last step (lists default to empty). */
  last?: Partial<Omit<IndexChanges, "warnings">>;
  /** Each must match one warning of the last step; without it, the last step warns nothing. */
  warnings?: RegExp[];
}

const X = "PeerAuthentication/foo/x";
const Y = "PeerAuthentication/foo/y";

function toResult(file: string, state: NonNullable<FileState>): ValidationResult {
  const resources: ValidResource[] = state.docs.map((d, i) => {
    const [kind, namespace, name] = d.key.split("/");
    const documentIndex = d.doc ?? i;
    // A stand-in for validateText's output: the index keys and keeps resources without reading
    // their spec, so a marker spec of any kind's shape serves.
    const resource = {
      apiVersion: d.apiVersion ?? "security.mesh.io/v1",
      kind,
      metadata: namespace === "" ? { name } : { name, namespace },
      spec: d.spec ?? { v: d.v ?? "1" },
    } as unknown as MeshResource;
    return {
      resource,
      source: { file, documentIndex, line: documentIndex * 10 + 1 },
    };
  });
  const issues: ValidationIssue[] = (state.errors ?? []).map((e) => ({
    file,
    documentIndex: e.doc,
    line: e.doc === undefined ? undefined : e.doc * 10 + 5,
    resource: e.resource,
    field: "spec.mtls.mode",
    message: e.message ?? "must be one of UNSET, DISABLE, PERMISSIVE, STRICT",
    severity: "error",
  }));
  return { resources, skipped: [], issues };
}

const cases: Case[] = [
  {
    name: "a new file adds its resources",
    steps: [["a.yaml", { docs: [{ key: X }, { key: Y }] }]],
    inForce: { [X]: "a.yaml#1", [Y]: "a.yaml#1" },
    last: { added: [X, Y] },
  },
  {
    name: "the same content again changes nothing",
    steps: [["a.yaml", { docs: [{ key: X }] }], ["a.yaml", { docs: [{ key: X }] }]],
    inForce: { [X]: "a.yaml#1" },
  },
  {
    name: "a changed spec is an update",
    steps: [["a.yaml", { docs: [{ key: X }] }], ["a.yaml", { docs: [{ key: X, v: "2" }] }]],
    inForce: { [X]: "a.yaml#2" },
    last: { updated: [X] },
  },
  {
    name: "a document that moves is an update: its source changed",
    steps: [["a.yaml", { docs: [{ key: X }] }], ["a.yaml", { docs: [{ key: Y }, { key: X }] }]],
    inForce: { [X]: "a.yaml#1", [Y]: "a.yaml#1" },
    last: { added: [Y], updated: [X] },
  },
  {
    name: "reordered map keys are not a change",
    steps: [
      ["a.yaml", { docs: [{ key: X, spec: { a: 1, b: { c: 2, d: 3 } } }] }],
      ["a.yaml", { docs: [{ key: X, spec: { b: { d: 3, c: 2 }, a: 1 } }] }],
    ],
    inForce: { [X]: "a.yaml#undefined" },
  },
  {
    name: "a resource taken out of a valid file is removed",
    steps: [["a.yaml", { docs: [{ key: X }, { key: Y }] }], ["a.yaml", { docs: [{ key: Y, doc: 1 }] }]],
    inForce: { [Y]: "a.yaml#1" },
    last: { removed: [X] },
  },
  {
    name: "a deleted file removes its resources",
    steps: [["a.yaml", { docs: [{ key: X }, { key: Y }] }], ["a.yaml", undefined]],
    inForce: {},
    last: { removed: [X, Y] },
  },
  {
    name: "an invalid document keeps the last good version, with a warning",
    steps: [
      ["a.yaml", { docs: [{ key: X }, { key: Y }] }],
      ["a.yaml", { docs: [{ key: Y, doc: 1, v: "2" }], errors: [{ doc: 0 }] }],
    ],
    inForce: { [X]: "a.yaml#1", [Y]: "a.yaml#2" },
    last: { updated: [Y] },
    warnings: [
      /^PeerAuthentication\/foo\/x: its document in a\.yaml is now invalid; the last good version .*line 1\) stays in force until the file is fixed or deleted$/,
    ],
  },
  {
    name: "a file-level error (too large, not UTF-8) keeps every resource",
    steps: [["a.yaml", { docs: [{ key: X }, { key: Y }] }], ["a.yaml", { docs: [], errors: [{}] }]],
    inForce: { [X]: "a.yaml#1", [Y]: "a.yaml#1" },
    warnings: [/^PeerAuthentication\/foo\/x: .*last good/, /^PeerAuthentication\/foo\/y: .*last good/],
  },
  {
    name: "a YAML syntax error keeps every resource: the documents after it may be swallowed",
    steps: [
      ["a.yaml", { docs: [{ key: X }, { key: Y }] }],
      ["a.yaml", {
        docs: [],
        errors: [{ doc: 0, message: "invalid YAML: Flow sequence must end with a ]" }],
      }],
    ],
    inForce: { [X]: "a.yaml#1", [Y]: "a.yaml#1" },
    warnings: [/^PeerAuthentication\/foo\/x: .*last good/, /^PeerAuthentication\/foo\/y: .*last good/],
  },
  {
    name: "an error naming the resource keeps it, even where its document moved",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["a.yaml", { docs: [{ key: Y }], errors: [{ doc: 2, resource: "PeerAuthentication foo/x" }] }],
    ],
    inForce: { [X]: "a.yaml#1", [Y]: "a.yaml#1" },
    last: { added: [Y] },
    warnings: [/^PeerAuthentication\/foo\/x: .*last good/],
  },
  {
    name: "a resource taken out while another document is invalid is removed",
    steps: [
      ["a.yaml", { docs: [{ key: X }, { key: Y }] }],
      ["a.yaml", { docs: [{ key: Y, doc: 0 }], errors: [{ doc: 1, resource: "PeerAuthentication foo/z" }] }],
    ],
    inForce: { [Y]: "a.yaml#1" },
    last: { removed: [X], updated: [Y] },
  },
  {
    name: "a last good version stays while the file has errors, warned once",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["a.yaml", { docs: [], errors: [{ doc: 0 }] }],
      ["a.yaml", { docs: [{ key: Y }], errors: [{ doc: 3 }] }],
    ],
    inForce: { [X]: "a.yaml#1", [Y]: "a.yaml#1" },
    last: { added: [Y] },
  },
  {
    name: "a last good version goes when the file is fixed without it",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["a.yaml", { docs: [], errors: [{ doc: 0 }] }],
      ["a.yaml", { docs: [{ key: Y }] }],
    ],
    inForce: { [Y]: "a.yaml#1" },
    last: { added: [Y], removed: [X] },
  },
  {
    name: "a last good version is replaced when its document is fixed",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["a.yaml", { docs: [], errors: [{ doc: 0 }] }],
      ["a.yaml", { docs: [{ key: X, v: "2" }] }],
    ],
    inForce: { [X]: "a.yaml#2" },
    last: { updated: [X] },
  },
  {
    name: "fixing back to the last good content changes nothing",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["a.yaml", { docs: [], errors: [{ doc: 0 }] }],
      ["a.yaml", { docs: [{ key: X }] }],
    ],
    inForce: { [X]: "a.yaml#1" },
  },
  {
    name: "a last good version goes with its file",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["a.yaml", { docs: [], errors: [{ doc: 0 }] }],
      ["a.yaml", undefined],
    ],
    inForce: {},
    last: { removed: [X] },
  },
  {
    name: "a brand-new invalid file adds nothing",
    steps: [["a.yaml", { docs: [], errors: [{ doc: 0 }, {}] }]],
    inForce: {},
  },
  {
    name: "a key in two files: the first loaded stays in force, the conflict names both files",
    steps: [["a.yaml", { docs: [{ key: X }] }], ["b.yaml", { docs: [{ key: X, v: "2" }] }]],
    inForce: { [X]: "a.yaml#1" },
    warnings: [
      /^PeerAuthentication\/foo\/x is defined in both a\.yaml \(line 1\) and b\.yaml \(line 1\); a\.yaml was loaded first and stays in force, b\.yaml is ignored until a\.yaml no longer defines it$/,
    ],
  },
  {
    name: "the other file takes over when the first is deleted",
    steps: [["a.yaml", { docs: [{ key: X }] }], ["b.yaml", { docs: [{ key: X, v: "2" }] }], [
      "a.yaml",
      undefined,
    ]],
    inForce: { [X]: "b.yaml#2" },
    last: { updated: [X] },
    warnings: [/^PeerAuthentication\/foo\/x: b\.yaml is now in force \(a\.yaml no longer defines it\)$/],
  },
  {
    name: "the other file takes over when the first stops defining the key",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["b.yaml", { docs: [{ key: X, v: "2" }] }],
      ["a.yaml", { docs: [{ key: Y }] }],
    ],
    inForce: { [X]: "b.yaml#2", [Y]: "a.yaml#1" },
    last: { added: [Y], updated: [X] },
    warnings: [/b\.yaml is now in force/],
  },
  {
    name: "an edit of the shadowed file changes nothing and repeats the conflict",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["b.yaml", { docs: [{ key: X, v: "2" }] }],
      ["b.yaml", { docs: [{ key: X, v: "3" }] }],
    ],
    inForce: { [X]: "a.yaml#1" },
    warnings: [/defined in both a\.yaml .* and b\.yaml/],
  },
  {
    name: "an edit of the winner is an update",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["b.yaml", { docs: [{ key: X, v: "2" }] }],
      ["a.yaml", { docs: [{ key: X, v: "4" }] }],
    ],
    inForce: { [X]: "a.yaml#4" },
    last: { updated: [X] },
  },
  {
    name: "deleting the shadowed file changes nothing",
    steps: [["a.yaml", { docs: [{ key: X }] }], ["b.yaml", { docs: [{ key: X, v: "2" }] }], [
      "b.yaml",
      undefined,
    ]],
    inForce: { [X]: "a.yaml#1" },
  },
  {
    name: "a winner whose document turns invalid keeps its place",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["b.yaml", { docs: [{ key: X, v: "2" }] }],
      ["a.yaml", { docs: [], errors: [{ doc: 0 }] }],
    ],
    inForce: { [X]: "a.yaml#1" },
    warnings: [/last good/],
  },
  {
    name: "a file that comes back after a deletion queues behind the file now in force",
    steps: [
      ["a.yaml", { docs: [{ key: X }] }],
      ["b.yaml", { docs: [{ key: X, v: "2" }] }],
      ["a.yaml", undefined],
      ["a.yaml", { docs: [{ key: X }] }],
    ],
    inForce: { [X]: "b.yaml#2" },
    warnings: [/defined in both b\.yaml .* and a\.yaml/],
  },
  {
    name: "a key twice in one file: the first document stays in force",
    steps: [["a.yaml", { docs: [{ key: X }, { key: X, v: "2" }] }]],
    inForce: { [X]: "a.yaml#1" },
    last: { added: [X] },
    warnings: [
      /^PeerAuthentication\/foo\/x is defined twice in a\.yaml \(lines 1 and 11\); the first stays in force$/,
    ],
  },
  {
    name: "a resource without a namespace is keyed in `default`",
    steps: [["a.yaml", { docs: [{ key: "PeerAuthentication//x" }] }]],
    inForce: { "PeerAuthentication/default/x": "a.yaml#1" },
    last: { added: ["PeerAuthentication/default/x"] },
  },
  {
    name: "Istio's API group and the mesh's name the same resource",
    steps: [
      ["a.yaml", { docs: [{ key: X, apiVersion: "security.istio.io/v1beta1" }] }],
      ["b.yaml", { docs: [{ key: X, v: "2" }] }],
    ],
    inForce: { [X]: "a.yaml#1" },
    warnings: [/defined in both/],
  },
  {
    name: "kinds are separate keys",
    steps: [["a.yaml", { docs: [{ key: X }, { key: "AuthorizationPolicy/foo/x" }] }]],
    inForce: { [X]: "a.yaml#1", "AuthorizationPolicy/foo/x": "a.yaml#1" },
    last: { added: ["AuthorizationPolicy/foo/x", X] },
  },
];

for (const c of cases) {
  Deno.test(`ResourceIndex: ${c.name}`, () => {
    const index = new ResourceIndex();
    let changes: IndexChanges | undefined;
    for (const [file, state] of c.steps) {
      changes = index.apply(file, state === undefined ? undefined : toResult(file, state));
    }
    const inForce = Object.fromEntries(
      index.entries().map((e) => [e.key, `${e.source.file}#${(e.resource.spec as { v?: string }).v}`]),
    );
    assert.deepEqual(inForce, c.inForce);
    assert.deepEqual(
      { added: changes!.added, updated: changes!.updated, removed: changes!.removed },
      { added: [], updated: [], removed: [], ...c.last },
    );
    const expected = c.warnings ?? [];
    assert.equal(changes!.warnings.length, expected.length, `warnings: ${JSON.stringify(changes!.warnings)}`);
    for (const re of expected) {
      assert.ok(changes!.warnings.some((w) => re.test(w)), `no warning matches ${re}: ${changes!.warnings}`);
    }
  });
}

Deno.test("ResourceIndex: entries are deeply frozen copies, unchanged entries keep their identity", () => {
  const index = new ResourceIndex();
  const input = toResult("a.yaml", { docs: [{ key: X, spec: { rules: [{ to: "x" }] } }] });
  index.apply("a.yaml", input);
  const entry = index.get(X)!;
  assert.ok(Object.isFrozen(entry) && Object.isFrozen(entry.source) && Object.isFrozen(entry.resource));
  assert.ok(Object.isFrozen((entry.resource.spec as { rules: object[] }).rules[0]));
  assert.equal(Object.isFrozen(input.resources[0].resource), false, "the caller's result is not frozen");
  assert.deepEqual(
    { kind: entry.kind, namespace: entry.namespace, name: entry.name, source: entry.source },
    {
      kind: "PeerAuthentication",
      namespace: "foo",
      name: "x",
      source: { file: "a.yaml", documentIndex: 0, line: 1 },
    },
  );
  index.apply("a.yaml", toResult("a.yaml", { docs: [{ key: X, spec: { rules: [{ to: "x" }] } }] }));
  assert.equal(index.get(X), entry);
});

Deno.test("ResourceIndex: lastGoodKeys lists what an invalid file keeps", () => {
  const index = new ResourceIndex();
  index.apply("a.yaml", toResult("a.yaml", { docs: [{ key: X }, { key: Y }] }));
  index.apply("a.yaml", toResult("a.yaml", { docs: [{ key: Y, doc: 1 }], errors: [{ doc: 0 }] }));
  assert.deepEqual(index.lastGoodKeys("a.yaml"), [X]);
  index.apply("a.yaml", toResult("a.yaml", { docs: [{ key: X }, { key: Y }] }));
  assert.deepEqual(index.lastGoodKeys("a.yaml"), []);
});

Deno.test("resourceKey: Kind/namespace/name, `default` when no namespace is given", () => {
  const table: [Pick<ValidResource["resource"], "kind" | "metadata">, string][] = [
    [
      { kind: "Gateway", metadata: { name: "gw", namespace: "ns" } },
      "Gateway/ns/gw",
    ],
    [
      { kind: "ServiceEntry", metadata: { name: "se" } },
      "ServiceEntry/default/se",
    ],
  ];
  for (const [resource, key] of table) assert.equal(resourceKey(resource), key);
});
