/**
 * The repository's import graph and the rules it must keep (issue 13, "One common layer below the
 * programs"):
 *
 * - (a) meshd/, proxy/ and meshctl/ import only themselves and shared/ (shared/internal/ included):
 *   never another program, deploy/ or tests/;
 * - (b) shared/'s published part (everything outside shared/internal/) imports neither shared/internal/
 *   nor any program, deploy/ or tests/;
 * - (c) shared/internal/ imports nothing outside shared/;
 * - (d) no file reaches itself through its imports (no import cycle), anywhere.
 *
 * deploy/ and tests/ may import anything (rules (a)-(c) do not apply to them), but take part in (d).
 *
 * Edges come from Deno's own parser (`deno info --json`, the module graph `deno check` uses): static
 * `import`/`export … from`, `import type`/`export type`, side-effect `import "…"`, and dynamic
 * `import("…")` with a literal string; comments and strings are never mistaken for imports. Deno's
 * graph does not see `new URL("…", import.meta.url)`, by which workers and child processes name their
 * module, so those are read from the source: a literal URL naming a module (.ts, .tsx, .js, .mjs), on a
 * line that is not a comment. URLs of data files (YAML fixtures, deno.json, folders) are not imports.
 *
 * @module
 */
import { dirname, join, normalize, relative } from "node:path";

/** One import: who imports what (both repo-relative, `/`-separated), and how. */
export interface ImportEdge {
  from: string;
  to: string;
  kind: "static" | "type" | "dynamic" | "url";
}

/** The graph: every file, and the repo-relative files it imports (files outside the repo left out). */
export type ImportGraph = Map<string, ImportEdge[]>;

/** A broken boundary: the rule, and the import that breaks it. */
export interface Violation {
  rule: "a" | "b" | "c";
  edge: ImportEdge;
  reason: string;
}

const PROGRAMS = ["meshd", "proxy", "meshctl"] as const;
const MODULE_URL = /new\s+URL\(\s*(["'])([^"'\n]+\.(?:ts|tsx|js|mjs))\1\s*,\s*import\.meta\.url\s*\)/g;

/** The top folder of a repo-relative path (`meshd/xds/a.ts` → `meshd`). */
function top(path: string): string {
  return path.split("/")[0];
}

function isInternal(path: string): boolean {
  return path.startsWith("shared/internal/");
}

/** The program a path belongs to, or undefined for shared/, deploy/, tests/ and the rest. */
export function programOf(path: string): string | undefined {
  return (PROGRAMS as readonly string[]).includes(top(path)) ? top(path) : undefined;
}

/** The boundary rule (a), (b) or (c) an import breaks, or undefined when it keeps them all. */
export function checkEdge(edge: ImportEdge): Violation | undefined {
  const { from, to } = edge;
  const program = programOf(from);
  if (program !== undefined) {
    if (top(to) === program || top(to) === "shared") return undefined;
    const what = programOf(to) ? `another program (${top(to)})` : `${top(to)}/`;
    return { rule: "a", edge, reason: `${program} must import only itself and shared/, not ${what}` };
  }
  if (top(from) !== "shared") return undefined;
  if (isInternal(from)) {
    if (top(to) === "shared") return undefined;
    return { rule: "c", edge, reason: `shared/internal must import only shared/, not ${top(to)}/` };
  }
  if (isInternal(to)) {
    return { rule: "b", edge, reason: "shared's published part must not import shared/internal" };
  }
  if (top(to) === "shared") return undefined;
  return { rule: "b", edge, reason: `shared's published part must import only shared/, not ${top(to)}/` };
}

/** Every import of the graph that breaks rule (a), (b) or (c), sorted by file. */
export function boundaryViolations(graph: ImportGraph): Violation[] {
  const out: Violation[] = [];
  for (const edges of graph.values()) {
    for (const e of edges) {
      const v = checkEdge(e);
      if (v) out.push(v);
    }
  }
  return out.sort((x, y) => x.edge.from.localeCompare(y.edge.from) || x.edge.to.localeCompare(y.edge.to));
}

/**
 * The import cycles (rule (d)): one per strongly connected component of more than one file, or a
 * file that imports itself; each as the files of one concrete cycle in import order, first file
 * repeated at the end (`a.ts → b.ts → a.ts`). Tarjan's algorithm, iterative (deep graphs).
 */
export function findCycles(graph: ImportGraph): string[][] {
  const succ = (v: string): string[] => [...new Set((graph.get(v) ?? []).map((e) => e.to))].sort();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  for (const root of [...graph.keys()].sort()) {
    if (index.has(root)) continue;
    const work: { v: string; children: string[]; i: number }[] = [];
    const visit = (v: string) => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      onStack.add(v);
      work.push({ v, children: succ(v), i: 0 });
    };
    visit(root);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      if (frame.i < frame.children.length) {
        const w = frame.children[frame.i++];
        if (!index.has(w)) visit(w);
        else if (onStack.has(w)) low.set(frame.v, Math.min(low.get(frame.v)!, index.get(w)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].v;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.v)!));
      }
      if (low.get(frame.v) !== index.get(frame.v)) continue;
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== frame.v);
      const selfLoop = component.length === 1 && succ(component[0]).includes(component[0]);
      if (component.length > 1 || selfLoop) components.push(component);
    }
  }
  return components.map((c) => cycleThrough(c.sort(), succ)).sort((x, y) => x[0].localeCompare(y[0]));
}

/** A shortest cycle from the component's first file back to it, inside the component. */
function cycleThrough(component: string[], succ: (v: string) => string[]): string[] {
  const inside = new Set(component);
  const start = component[0];
  const parent = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of succ(v)) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = parent.get(u)!) path.unshift(u);
        return [start, ...path];
      }
      if (!parent.has(w)) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

/** The module URLs named by `new URL("…", import.meta.url)` outside comments, as written. */
export function moduleUrlsOf(source: string): string[] {
  const urls: string[] = [];
  for (const line of source.split("\n")) {
    const t = line.trimStart();
    if (t.startsWith("//") || t.startsWith("*") || t.startsWith("/*")) continue;
    for (const m of line.matchAll(MODULE_URL)) urls.push(m[2]);
  }
  return urls;
}

/** The .ts files under `dirs` of `root` (repo-relative), leaving out tests/fixtures. */
export async function tsFiles(root: string, dirs: string[]): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const e of Deno.readDir(join(root, dir))) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory && path !== "tests/fixtures") await walk(path);
      else if (e.isFile && e.name.endsWith(".ts")) out.push(path);
    }
  };
  for (const d of dirs) await walk(d);
  return out.sort();
}

interface DenoInfoModule {
  specifier: string;
  error?: string;
  dependencies?: {
    specifier: string;
    code?: { specifier?: string; error?: string };
    type?: { specifier?: string; error?: string };
    isDynamic?: boolean;
  }[];
}

/**
 * Reads the import graph of `files` (repo-relative) under `root`, with `root`'s deno.json.
 *
 * @throws Error naming the files Deno could not load or resolve (a broken import is a finding too)
 */
export async function readImportGraph(root: string, files: string[]): Promise<ImportGraph> {
  const dir = await Deno.makeTempDir({ prefix: "import_graph_" });
  try {
    const entry = join(dir, "entry.ts");
    const url = (f: string) => new URL(`file://${join(root, f)}`).href;
    await Deno.writeTextFile(entry, files.map((f) => `import ${JSON.stringify(url(f))};\n`).join(""));
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--config", join(root, "deno.json"), entry],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) throw new Error(`deno info failed: ${new TextDecoder().decode(out.stderr)}`);
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as { modules: DenoInfoModule[] };
    const toRepo = (specifier: string): string | undefined => {
      if (!specifier.startsWith("file://")) return undefined;
      const rel = relative(root, decodeURIComponent(new URL(specifier).pathname));
      return rel.startsWith("..") ? undefined : rel;
    };
    const wanted = new Set(files);
    const graph: ImportGraph = new Map(files.map((f) => [f, []]));
    const problems: string[] = [];
    for (const m of info.modules) {
      const from = toRepo(m.specifier);
      if (from === undefined || !wanted.has(from)) continue;
      if (m.error) problems.push(`${from}: ${m.error}`);
      for (const d of m.dependencies ?? []) {
        for (const [slot, kind] of [["code", "static"], ["type", "type"]] as const) {
          const r = d[slot];
          if (r?.error) problems.push(`${from}: ${d.specifier}: ${r.error}`);
          const to = r?.specifier ? toRepo(r.specifier) : undefined;
          if (to === undefined || graph.get(from)!.some((e) => e.to === to)) continue;
          graph.get(from)!.push({ from, to, kind: d.isDynamic ? "dynamic" : kind });
        }
      }
    }
    for (const from of files) {
      for (const u of moduleUrlsOf(await Deno.readTextFile(join(root, from)))) {
        graph.get(from)!.push({ from, to: normalize(join(dirname(from), u)), kind: "url" });
      }
    }
    if (problems.length > 0) throw new Error(`imports Deno cannot resolve:\n${problems.join("\n")}`);
    return graph;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
