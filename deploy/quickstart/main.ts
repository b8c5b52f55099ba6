/**
 * The quickstart (README command 1). For now the main job is `meshctl validate` on real input: the
 * policy YAML of Istio's security tasks must validate unchanged, and a file with typical mistakes
 * must be rejected with one located error per mistake. The live mesh replaces this with issue #5.
 *
 * @module
 */
import { runMeshctl } from "../../meshctl/cli.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const encoder = new TextEncoder();
const print = (t: string) => Deno.stdout.writeSync(encoder.encode(t));

/** Runs one meshctl step; a rejection only counts when meshctl reported located issues, not a crash. */
async function step(title: string, args: string[], expectedCode: number): Promise<boolean> {
  print(`\n== ${title}\n$ meshctl ${args.join(" ")}\n`);
  let located = 0;
  const out = (t: string) => {
    located +=
      t.split("\n").filter((l) => /^error: tests\/fixtures\/[^:]+:\d+: document \d+: /.test(l)).length;
    print(t);
  };
  const code = await runMeshctl(args, { stdout: out, stderr: print, setExitCode: () => {} });
  const ok = code === expectedCode && (expectedCode === 0 || located > 0);
  print(`-- exit code ${code} (expected ${expectedCode}): ${ok ? "as expected" : "UNEXPECTED"}\n`);
  return ok;
}

if (import.meta.main) {
  Deno.chdir(ROOT);
  const results = [
    await step(
      "Istio's security task YAML (mtls-migration, authn-policy, authz-jwt, authz-deny) validates unchanged",
      ["validate", "-f", "tests/fixtures/istio"],
      0,
    ),
    await step(
      "A file with typical mistakes: every error is reported with file, document, line and field",
      ["validate", "-f", "tests/fixtures/invalid/mixed_errors.yaml"],
      1,
    ),
    await step(
      "Istio's Gateway API variants use targetRef, which this mesh rejects clearly",
      ["validate", "-f", "tests/fixtures/unsupported/istio-authn-policy-gateway-api"],
      1,
    ),
  ];
  const failed = results.filter((r) => !r).length;
  print(`\nquickstart: ${results.length - failed} of ${results.length} steps as expected\n`);
  Deno.exit(failed === 0 ? 0 : 1);
}
