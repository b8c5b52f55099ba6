/**
 * No source file over 500 lines (the developers' guide: split by responsibility instead). Checks every
 * TypeScript file, every Python and shell helper (`.py`, `.sh`, or an extensionless script with a `#!`
 * line, such as `dev` and `.ci/run`), in the repository outside `.tools/` (the Deno install),
 * `tests/fixtures/` (copied upstream material), `.git/`, `node_modules/` and `.lab/` (lab run state).
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
/** The most lines a file may have. */
const MAX_LINES = 500;
const SKIPPED_DIRS = new Set([".git", ".tools", "node_modules", ".lab", "tests/fixtures"]);

/** Lines as an editor numbers them: a final newline does not start another line. */
function lineCount(text: string): number {
  if (text === "") return 0;
  const newlines = text.split("\n").length - 1;
  return text.endsWith("\n") ? newlines : newlines + 1;
}

/** Whether a file is one this check counts, by its name and (for extensionless files) its first bytes. */
function isCheckedSource(name: string, text: string): boolean {
  if (/\.(ts|py|sh)$/.test(name)) return true;
  return !name.includes(".") && text.startsWith("#!");
}

/** Every checked file under the root, as repository-relative paths with their line counts. */
async function sourceFiles(): Promise<{ path: string; lines: number }[]> {
  const out: { path: string; lines: number }[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const e of Deno.readDir(new URL(dir || ".", ROOT))) {
      const path = dir + e.name;
      if (e.isDirectory) {
        if (!SKIPPED_DIRS.has(path) && !SKIPPED_DIRS.has(e.name)) await walk(`${path}/`);
        continue;
      }
      if (!e.isFile) continue;
      const text = await Deno.readTextFile(new URL(path, ROOT));
      if (isCheckedSource(e.name, text)) out.push({ path, lines: lineCount(text) });
    }
  };
  await walk("");
  return out.sort((a, b) => a.path.localeCompare(b.path));
}

Deno.test("lineCount counts lines as an editor does", () => {
  assert.equal(lineCount(""), 0);
  assert.equal(lineCount("a"), 1);
  assert.equal(lineCount("a\n"), 1);
  assert.equal(lineCount("a\nb"), 2);
  assert.equal(lineCount("a\n\n"), 2);
  assert.equal(lineCount("x\n".repeat(MAX_LINES + 1)), MAX_LINES + 1);
});

Deno.test("isCheckedSource takes TypeScript, Python and shell files and extensionless scripts", () => {
  assert.ok(isCheckedSource("main.ts", ""));
  assert.ok(isCheckedSource("gen.py", ""));
  assert.ok(isCheckedSource("setup.sh", ""));
  assert.ok(isCheckedSource("dev", "#!/bin/sh\n"));
  assert.ok(!isCheckedSource("README.md", "# title"));
  assert.ok(!isCheckedSource("deno.lock", "{}"));
  assert.ok(!isCheckedSource("Makefile", "all:\n"));
});

Deno.test(`no source file has more than ${MAX_LINES} lines`, async () => {
  const files = await sourceFiles();
  // The walk must see the repository, or an empty list would pass.
  for (const known of ["dev", ".ci/run", "proxy/main.ts", "tests/structure/file_length_test.ts"]) {
    assert.ok(files.some((f) => f.path === known), `${known} was not checked: the walk missed files`);
  }
  const long = files.filter((f) => f.lines > MAX_LINES);
  assert.deepEqual(
    long.map((f) => `${f.path}: ${f.lines} lines`),
    [],
    `files over ${MAX_LINES} lines (split each by responsibility):\n${
      long.map((f) => `  ${f.path}: ${f.lines}`).join("\n")
    }`,
  );
});
