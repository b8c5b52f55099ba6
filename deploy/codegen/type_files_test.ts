import assert from "node:assert/strict";
import { splitDeclarations, typeFiles, typeIndex } from "./type_files.ts";

const COMPILED = `/**
 * A kind
 */
export interface Kind {
  /**
   * Its spec, see Spec
   */
  spec: Spec;
  meta: Meta;
}
/**
 * The spec
 */
export interface Spec {
  rules?: Rule[];
}
export interface Rule {
  name: string;
}
/**
 * Metadata
 */
export interface Meta {
  name: string;
}
`;

Deno.test("splitDeclarations keeps each interface with its doc comment, in order", () => {
  const decls = splitDeclarations(COMPILED);
  assert.deepEqual(decls.map((d) => d.name), ["Kind", "Spec", "Rule", "Meta"]);
  assert.equal(decls[1].text, "/**\n * The spec\n */\nexport interface Spec {\n  rules?: Rule[];\n}");
  assert.equal(decls[2].text, "export interface Rule {\n  name: string;\n}");
  assert.equal(decls.map((d) => d.text).join("\n") + "\n", COMPILED);
});

Deno.test("splitDeclarations refuses text outside a declaration", () => {
  assert.throws(() => splitDeclarations("const x = 1;\n"), /unexpected line in the generated types/);
  assert.throws(() => splitDeclarations("export interface A {\n  a: string;\n"), /inside a declaration/);
});

Deno.test("typeFiles puts each interface in its module's file and imports what it uses from others", () => {
  const where: Record<string, string> = {
    Kind: "types/kind.gen.ts",
    Spec: "types/kind.gen.ts",
    Rule: "types/kind/rule.gen.ts",
    Meta: "types/common.gen.ts",
  };
  const files = typeFiles(splitDeclarations(COMPILED), (n) => where[n], "// banner\n");
  assert.deepEqual([...files.keys()], ["types/kind.gen.ts", "types/kind/rule.gen.ts", "types/common.gen.ts"]);
  const kind = files.get("types/kind.gen.ts")!;
  // Only code counts: "Spec" in Kind's comment is no reason to import, and Spec is in the same file.
  assert.match(
    kind,
    /^\/\/ banner\nimport type \{ Meta \} from "\.\/common\.gen\.ts";\nimport type \{ Rule \} from "\.\/kind\/rule\.gen\.ts";\n\n\/\*\*\n \* A kind/,
  );
  assert.equal(
    files.get("types/kind/rule.gen.ts"),
    "// banner\nexport interface Rule {\n  name: string;\n}\n",
  );
  assert.doesNotMatch(files.get("types/common.gen.ts")!, /import/);
});

Deno.test("typeFiles imports across folders with ../", () => {
  const where: Record<string, string> = {
    Kind: "types/kind.gen.ts",
    Spec: "types/kind/spec.gen.ts",
    Rule: "types/kind/spec.gen.ts",
    Meta: "types/common.gen.ts",
  };
  const files = typeFiles(splitDeclarations(COMPILED), (n) => where[n], "");
  assert.match(files.get("types/kind.gen.ts")!, /import type \{ Spec \} from "\.\/kind\/spec\.gen\.ts";/);
  const where2: Record<string, string> = { ...where, Rule: "types/rule.gen.ts" };
  const files2 = typeFiles(splitDeclarations(COMPILED), (n) => where2[n], "");
  assert.match(files2.get("types/kind/spec.gen.ts")!, /import type \{ Rule \} from "\.\.\/rule\.gen\.ts";/);
});

Deno.test("typeFiles names an interface whose title no schema module has", () => {
  assert.throws(
    () => typeFiles(splitDeclarations(COMPILED), (n) => n === "Rule" ? undefined : "types/a.gen.ts", ""),
    /no schema module has the title "Rule"/,
  );
});

Deno.test("typeIndex re-exports every file, sorted", () => {
  assert.equal(
    typeIndex(["types/b.gen.ts", "types/a/x.gen.ts"], "// i\n"),
    '// i\nexport * from "./types/a/x.gen.ts";\nexport * from "./types/b.gen.ts";\n',
  );
});
