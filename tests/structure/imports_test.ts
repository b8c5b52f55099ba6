/**
 * The import boundaries and the no-circle rule (issue 13; rules in import_graph.ts): first the rules
 * on small graphs built here, each case one that must fail or must pass, and the reader on files
 * written here (every kind of import seen; comments and strings ignored); then the real tree, whose
 * failure names each file → target, and each cycle's files.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  boundaryViolations,
  checkEdge,
  findCycles,
  type ImportEdge,
  type ImportGraph,
  readImportGraph,
  tsFiles,
} from "./import_graph.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const TREE = ["meshd", "proxy", "meshctl", "shared", "deploy", "tests"];

function graphOf(edges: [string, string][]): ImportGraph {
  const g: ImportGraph = new Map();
  for (const [from, to] of edges) {
    if (!g.has(to)) g.set(to, []);
    g.set(from, [...(g.get(from) ?? []), { from, to, kind: "static" }]);
  }
  return g;
}

const EDGES: { from: string; to: string; rule?: "a" | "b" | "c" }[] = [
  // (a) programs import only themselves and shared/ (shared/internal/ included)
  { from: "proxy/agent/node.ts", to: "proxy/agent/tls.ts" },
  { from: "proxy/agent/node.ts", to: "shared/mod.ts" },
  { from: "proxy/agent/node.ts", to: "shared/internal/xds/struct.ts" },
  { from: "proxy/agent/node.ts", to: "meshd/xds/struct.ts", rule: "a" },
  { from: "meshctl/cli.ts", to: "proxy/admin/config_dump.ts", rule: "a" },
  { from: "meshd/cli.ts", to: "meshctl/options.ts", rule: "a" },
  { from: "meshctl/lab_connector.ts", to: "deploy/lab/plan.ts", rule: "a" },
  { from: "meshd/server/a_test.ts", to: "tests/integration/meshd_support.ts", rule: "a" },
  { from: "proxy/proxy_test.ts", to: "meshd/ca/mod.ts", rule: "a" },
  // (b) shared's published part imports only itself
  { from: "shared/policy/evaluate.ts", to: "shared/identity/mod.ts" },
  { from: "shared/mod.ts", to: "shared/internal/jwks/refresher.ts", rule: "b" },
  { from: "shared/policy/evaluate.ts", to: "meshd/xds/generators.ts", rule: "b" },
  { from: "shared/api/x_test.ts", to: "tests/e2e/e2e_support.ts", rule: "b" },
  // (c) shared/internal imports only shared/
  { from: "shared/internal/lab/topology.ts", to: "shared/mod.ts" },
  { from: "shared/internal/lab/exec.ts", to: "shared/internal/lab/state.ts" },
  { from: "shared/internal/lab/plan.ts", to: "deploy/lab/mesh_config.ts", rule: "c" },
  { from: "shared/internal/tls/channel.ts", to: "proxy/agent/agent.ts", rule: "c" },
  // deploy/ and tests/ may import anything
  { from: "deploy/lab/up.ts", to: "meshd/ca/mod.ts" },
  { from: "tests/integration/proxy/proxy_test.ts", to: "meshd/server/test_support.ts" },
  { from: "tests/e2e/x_test.ts", to: "proxy/agent/agent.ts" },
];

for (const c of EDGES) {
  Deno.test(`boundary: ${c.from} → ${c.to} ${c.rule ? `breaks rule (${c.rule})` : "is allowed"}`, () => {
    const v = checkEdge({ from: c.from, to: c.to, kind: "static" });
    assert.equal(v?.rule, c.rule, v?.reason ?? "allowed");
  });
}

Deno.test("boundaryViolations reports every breaking import of a graph, and only those", () => {
  const g = graphOf(EDGES.map((e) => [e.from, e.to]));
  assert.deepEqual(
    boundaryViolations(g).map((v) => `${v.edge.from} → ${v.edge.to}`).sort(),
    EDGES.filter((e) => e.rule).map((e) => `${e.from} → ${e.to}`).sort(),
  );
});

const CYCLES: { name: string; edges: [string, string][]; cycles: string[][] }[] = [
  { name: "a chain", edges: [["a.ts", "b.ts"], ["b.ts", "c.ts"]], cycles: [] },
  {
    name: "a diamond",
    edges: [["a.ts", "b.ts"], ["a.ts", "c.ts"], ["b.ts", "d.ts"], ["c.ts", "d.ts"]],
    cycles: [],
  },
  { name: "two files", edges: [["a.ts", "b.ts"], ["b.ts", "a.ts"]], cycles: [["a.ts", "b.ts", "a.ts"]] },
  { name: "a file importing itself", edges: [["a.ts", "a.ts"]], cycles: [["a.ts", "a.ts"]] },
  {
    name: "three files, entered from outside",
    edges: [["main.ts", "c.ts"], ["c.ts", "d.ts"], ["d.ts", "e.ts"], ["e.ts", "c.ts"]],
    cycles: [["c.ts", "d.ts", "e.ts", "c.ts"]],
  },
  {
    name: "a tree and every command through one type (meshctl's old cli.ts)",
    edges: [["cli.ts", "x/cmd.ts"], ["cli.ts", "y/cmd.ts"], ["x/cmd.ts", "cli.ts"], ["y/cmd.ts", "cli.ts"]],
    cycles: [["cli.ts", "x/cmd.ts", "cli.ts"]],
  },
  {
    name: "two separate circles",
    edges: [["a.ts", "b.ts"], ["b.ts", "a.ts"], ["m.ts", "n.ts"], ["n.ts", "o.ts"], ["o.ts", "m.ts"]],
    cycles: [["a.ts", "b.ts", "a.ts"], ["m.ts", "n.ts", "o.ts", "m.ts"]],
  },
];

for (const c of CYCLES) {
  Deno.test(`cycles: ${c.name}`, () => {
    assert.deepEqual(findCycles(graphOf(c.edges)), c.cycles);
  });
}

Deno.test("the reader sees every kind of import, and none in comments or strings", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imports_test_" });
  try {
    await Deno.mkdir(join(dir, "meshd"));
    await Deno.mkdir(join(dir, "proxy"));
    await Deno.writeTextFile(join(dir, "deno.json"), "{}\n");
    for (const f of ["s", "t", "d", "u", "e", "f", "x", "y", "z"]) {
      await Deno.writeTextFile(join(dir, `meshd/${f}.ts`), "export type T = 1;\nexport const v = 1;\n");
    }
    await Deno.writeTextFile(
      join(dir, "proxy/a.ts"),
      [
        'import { v } from "../meshd/s.ts";',
        'import type { T } from "../meshd/t.ts";',
        'export { v as w } from "../meshd/e.ts";',
        'import "../meshd/f.ts";',
        '// import { v } from "../meshd/x.ts";',
        '/** new URL("../meshd/y.ts", import.meta.url) */',
        "const text = 'import { v } from \"../meshd/z.ts\"';",
        'const worker = new URL("../meshd/u.ts", import.meta.url);',
        'const data = new URL("../deno.json", import.meta.url);',
        "export async function load(): Promise<unknown> {",
        '  return await import("../meshd/d.ts");',
        "}",
        "export const all = [v, text, worker, data];",
        "export type U = T;",
        "",
      ].join("\n"),
    );
    const g = await readImportGraph(dir, ["proxy/a.ts"]);
    assert.deepEqual(
      g.get("proxy/a.ts")!.map((e: ImportEdge) => `${e.kind} ${e.to}`).sort(),
      [
        "dynamic meshd/d.ts",
        "static meshd/e.ts",
        "static meshd/f.ts",
        "static meshd/s.ts",
        "type meshd/t.ts",
        "url meshd/u.ts",
      ],
    );
    assert.equal(boundaryViolations(g).length, 6);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

let real: Promise<ImportGraph> | undefined;
/** The real tree's graph, read once for the tests below. */
function realGraph(): Promise<ImportGraph> {
  real ??= tsFiles(ROOT, TREE).then((files) => readImportGraph(ROOT, files));
  return real;
}

Deno.test("meshd, proxy and meshctl import only shared/; shared's published part never shared/internal", async () => {
  const found = boundaryViolations(await realGraph()).map((v) =>
    `(${v.rule}) ${v.edge.from} → ${v.edge.to} [${v.edge.kind}]: ${v.reason}`
  );
  assert.deepEqual(found, [], `imports across the boundaries:\n${found.join("\n")}`);
});

Deno.test("no import cycles", async () => {
  const cycles = findCycles(await realGraph()).map((c) => c.join(" → "));
  assert.deepEqual(cycles, [], `import cycles:\n${cycles.join("\n")}`);
});

Deno.test("the real tree is read: every program and shared/internal is in the graph, with edges", async () => {
  const g = await realGraph();
  for (
    const f of ["meshd/main.ts", "proxy/main.ts", "meshctl/main.ts", "shared/mod.ts", "deploy/lab/up.ts"]
  ) {
    assert.ok((g.get(f) ?? []).length > 0, `${f} has no imports in the graph`);
  }
  assert.ok([...g.keys()].some((f) => f.startsWith("shared/internal/")), "shared/internal/ not read");
  assert.ok(g.size > 300, `only ${g.size} files read`);
});
