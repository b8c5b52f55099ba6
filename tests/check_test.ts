/**
 * `deno task check` as part of the suite, so CI fails on unformatted code, lint findings, type
 * errors in any entry point, or generated files that are out of date with the schemas.
 */
import assert from "node:assert/strict";
import { generatedFiles, orphanedFiles } from "../deploy/codegen/main.ts";

const ROOT = new URL("../", import.meta.url);

async function run(args: string[]): Promise<{ ok: boolean; output: string }> {
  const r = await new Deno.Command(Deno.execPath(), { args, cwd: ROOT, env: { NO_COLOR: "1" } }).output();
  const dec = new TextDecoder();
  return { ok: r.success, output: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

Deno.test("deno task check is clean (fmt, lint, type-check of every entry point)", async () => {
  const r = await run(["task", "check"]);
  assert.ok(r.ok, r.output);
});

Deno.test("generated types and CRDs are up to date with the schemas (./dev codegen)", async () => {
  const files = await generatedFiles();
  for (const [path, content] of files) {
    const current = await Deno.readTextFile(new URL(path, ROOT)).catch(() => "");
    assert.equal(current, content, `${path} is stale: run ./dev codegen`);
  }
  assert.deepEqual(
    await orphanedFiles(files),
    [],
    "generated files no schema module makes: run ./dev codegen",
  );
});

Deno.test("shared/ is publishable to JSR (deno publish --dry-run, no slow types)", async () => {
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["publish", "--dry-run", "--allow-dirty"],
    cwd: new URL("shared/", ROOT),
    env: { NO_COLOR: "1" },
  }).output();
  const output = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
  assert.ok(r.success, output);
  assert.match(output, /Success Dry run complete/);
});
