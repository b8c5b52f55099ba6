/**
 * Splits the generated TypeScript interfaces into one file per schema module, so that the types of
 * a kind sit in a file named like the schema module that defines them (shared/api/schemas/x.ts →
 * shared/api/types/x.gen.ts) and no generated file grows past the project's 500-line limit. The
 * interfaces are compiled once from one container schema (so a sub-schema shared by several kinds
 * is one interface), then each goes to the module whose source holds its `title`.
 *
 * @module
 */

/** One top-level `export interface` of the compiled output, with its doc comment. */
export interface Declaration {
  name: string;
  /** The declaration's text, doc comment included, without a trailing newline. */
  text: string;
}

const DECLARATION = /^export (?:interface|type) (\w+)/;

/**
 * The top-level declarations of json-schema-to-typescript's formatted output, in order.
 *
 * @throws {Error} on a line outside any declaration (the output's shape changed)
 */
export function splitDeclarations(code: string): Declaration[] {
  const out: Declaration[] = [];
  let pending: string[] = [];
  let current: { name: string; lines: string[] } | undefined;
  for (const line of code.split("\n")) {
    if (current) {
      current.lines.push(line);
      if (line === "}" || (line.endsWith(";") && !line.startsWith(" "))) {
        out.push({ name: current.name, text: current.lines.join("\n") });
        current = undefined;
      }
      continue;
    }
    const m = DECLARATION.exec(line);
    if (m) {
      current = { name: m[1], lines: [...pending, line] };
      pending = [];
      if (line.endsWith(";")) {
        out.push({ name: m[1], text: current.lines.join("\n") });
        current = undefined;
      }
    } else if (line.startsWith("/**") || (pending.length > 0 && line.startsWith(" *"))) {
      pending.push(line);
    } else if (line.trim() !== "") {
      throw new Error(`unexpected line in the generated types: ${JSON.stringify(line)}`);
    }
  }
  if (current || pending.length > 0) throw new Error("the generated types end inside a declaration");
  return out;
}

/** The names a declaration refers to, among `known`, in the code (not the comments). */
function referencedNames(text: string, known: ReadonlySet<string>, self: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "");
  const names = new Set<string>();
  for (const m of code.matchAll(/\b[A-Z]\w*\b/g)) {
    if (m[0] !== self && known.has(m[0])) names.add(m[0]);
  }
  return [...names];
}

/** `a/b/c.gen.ts` relative to `a/b/d/e.gen.ts`: `../c.gen.ts`. */
function relativeImport(from: string, to: string): string {
  const fromDir = from.split("/").slice(0, -1);
  const toParts = to.split("/");
  let common = 0;
  while (common < fromDir.length && common < toParts.length - 1 && fromDir[common] === toParts[common]) {
    common++;
  }
  const up = fromDir.length - common;
  const rest = toParts.slice(common).join("/");
  return up === 0 ? `./${rest}` : `${"../".repeat(up)}${rest}`;
}

/**
 * One file per module: its declarations, after type imports of the names it uses from other files.
 *
 * @param fileOf the output file (a path relative to the index's folder, e.g. `types/gateway.gen.ts`)
 *   of each declaration name
 * @param banner text put first in every file
 * @returns the files by that path, in the order of their first declaration
 * @throws {Error} when a declaration has no file
 */
export function typeFiles(
  declarations: readonly Declaration[],
  fileOf: (name: string) => string | undefined,
  banner: string,
): Map<string, string> {
  const known = new Set(declarations.map((d) => d.name));
  const byFile = new Map<string, Declaration[]>();
  for (const d of declarations) {
    const file = fileOf(d.name);
    if (file === undefined) {
      throw new Error(`no schema module has the title "${d.name}" (titles name the generated interfaces)`);
    }
    byFile.set(file, [...byFile.get(file) ?? [], d]);
  }
  const files = new Map<string, string>();
  for (const [file, decls] of byFile) {
    const imports = new Map<string, Set<string>>();
    for (const d of decls) {
      for (const name of referencedNames(d.text, known, d.name)) {
        const from = fileOf(name)!;
        if (from === file) continue;
        imports.set(from, (imports.get(from) ?? new Set()).add(name));
      }
    }
    const importLines = [...imports].sort(([a], [b]) => a.localeCompare(b)).map(([from, names]) =>
      `import type { ${[...names].sort().join(", ")} } from "${relativeImport(file, from)}";\n`
    ).join("");
    files.set(
      file,
      `${banner}${importLines}${importLines ? "\n" : ""}${decls.map((d) => d.text).join("\n")}\n`,
    );
  }
  return files;
}

/**
 * The index that re-exports every file, so that importers keep one path.
 *
 * @param files the type files' paths relative to the index
 */
export function typeIndex(files: readonly string[], banner: string): string {
  return `${banner}${[...files].sort().map((f) => `export * from "./${f}";\n`).join("")}`;
}
