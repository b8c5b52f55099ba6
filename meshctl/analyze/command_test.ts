import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { meshctl } from "../test_support.ts";

const CONFIG = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: 10.1.0.2, labels: {app: httpbin}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: nobody, namespace: foo}
spec: {selector: {matchLabels: {app: nope}}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: quiet, namespace: foo, annotations: {galley.istio.io/analyze-suppress: IST0127}}
spec: {selector: {matchLabels: {app: other}}}
`;
const BROKEN = `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: bad, namespace: foo}
spec: {mtls: {mode: STRICTT}}
`;

async function withFiles(files: Record<string, string>, fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(`${dir}/${name}`, text);
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("analyze -o log: istioctl's line format; warnings alone exit 0, --failure-threshold Warning exits 79", async () => {
  await withFiles({ "c.yaml": CONFIG }, async (dir) => {
    const r = await meshctl(["analyze", "--use-orch=false", dir]);
    assert.equal(r.code, 0, r.err);
    assert.equal(
      r.out,
      `Warning [IST0127] (AuthorizationPolicy foo/nobody ${dir}/c.yaml:6) No matching workloads for this resource ` +
        `with the following labels: app=nope\n`,
    );
    const strict = await meshctl(["analyze", "--use-orch=false", "--failure-threshold", "Warning", dir]);
    assert.equal(strict.code, 79);
  });
});

Deno.test("analyze: a schema error is IST0106 (Error) and exits 79; --output-threshold hides lower levels", async () => {
  await withFiles({ "c.yaml": CONFIG, "bad.yaml": BROKEN }, async (dir) => {
    const r = await meshctl(["analyze", "--use-orch=false", "--output-threshold", "Error", dir]);
    assert.equal(r.code, 79);
    assert.match(
      r.out,
      new RegExp(
        `^Error \\[IST0106\\] \\(PeerAuthentication foo/bad ${dir}/bad.yaml:4\\) Schema validation error: spec.mtls.mode: must be one of`,
      ),
    );
    assert.doesNotMatch(r.out, /IST0127/);
  });
});

Deno.test("analyze -o json and -o yaml: code, level, origin, reference, message, documentationUrl", async () => {
  await withFiles({ "c.yaml": CONFIG }, async (dir) => {
    const json = await meshctl(["analyze", "--use-orch=false", "-o", "json", dir]);
    assert.equal(json.code, 0, json.err);
    const expected = [{
      code: "IST0127",
      level: "Warning",
      origin: "AuthorizationPolicy foo/nobody",
      reference: `${dir}/c.yaml:6`,
      message: "No matching workloads for this resource with the following labels: app=nope",
      documentationUrl: "https://istio.io/latest/docs/reference/config/analysis/ist0127/?ref=meshctl-analyze",
    }];
    assert.deepEqual(JSON.parse(json.out), expected);
    const yaml = await meshctl(["analyze", "--use-orch=false", "-o", "yaml", dir]);
    assert.deepEqual(parseYaml(yaml.out), expected);
    const bad = await meshctl(["analyze", "--use-orch=false", "-o", "xml", dir]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /argument 'xml' is invalid\. Allowed choices are log, json, yaml/);
  });
});

Deno.test("analyze --suppress: exact, wildcard and name.namespace forms; unknown code warns; bad value is an error", async () => {
  await withFiles({ "c.yaml": CONFIG }, async (dir) => {
    for (
      const s of [
        "IST0127=AuthorizationPolicy foo/nobody",
        "IST0127=AuthorizationPolicy foo/*",
        "IST0127=* nobody.foo",
      ]
    ) {
      const r = await meshctl(["analyze", "--use-orch=false", "-S", s, dir]);
      assert.equal(r.out, "", `${s}: ${r.out}`);
      assert.match(r.err, /✔ No validation issues found when analyzing/);
    }
    const other = await meshctl([
      "analyze",
      "--use-orch=false",
      "-S",
      "IST0127=AuthorizationPolicy bar/*",
      dir,
    ]);
    assert.match(other.out, /IST0127/);
    const unknown = await meshctl([
      "analyze",
      "--use-orch=false",
      "-S",
      "IST9999=AuthorizationPolicy foo/*",
      dir,
    ]);
    assert.match(unknown.err, /Supplied message code 'IST9999' is an unknown message code/);
    const bad = await meshctl(["analyze", "--use-orch=false", "-S", "IST0127", dir]);
    assert.equal(bad.code, 1);
    assert.match(bad.err, /--suppress: "IST0127" is not <code>=<resource>/);
  });
});

Deno.test("analyze --color: yellow warnings and bold red errors; --color=false and the default in a pipe: none", async () => {
  await withFiles({ "c.yaml": CONFIG, "bad.yaml": BROKEN }, async (dir) => {
    const coloured = await meshctl(["analyze", "--use-orch=false", "--color", dir]);
    const lines = coloured.out.split("\n");
    assert.ok(lines.some((l) => l.startsWith("\x1b[33mWarning\x1b[0m [IST0127]")), coloured.out);
    assert.ok(lines.some((l) => l.startsWith("\x1b[1;31mError\x1b[0m [IST0106]")), coloured.out);
    for (const args of [["--color=false"], []]) {
      const plain = await meshctl(["analyze", "--use-orch=false", ...args, dir]);
      assert.ok(!plain.out.includes("\x1b"), plain.out);
    }
  });
});

Deno.test("analyze --list-analyzers, --verbose, --analyzer", async () => {
  const list = await meshctl(["analyze", "-L"]);
  assert.equal(list.code, 0);
  assert.match(list.out, /^Available analyzers:\n\t\* schema\.ValidationAnalyzer: /);
  assert.match(list.out, /\t\* auth\.TcpHttpFieldsAnalyzer: /);
  await withFiles({ "c.yaml": CONFIG }, async (dir) => {
    const r = await meshctl([
      "analyze",
      "--use-orch=false",
      "-v",
      "--analyzer",
      "authn.BlockedCIDRsAnalyzer",
      dir,
    ]);
    assert.match(r.err, /Executed analyzers:\n\t authn\.BlockedCIDRsAnalyzer\n\n/);
    assert.equal(r.out, "");
    const unknown = await meshctl(["analyze", "--use-orch=false", "--analyzer", "x.Y", dir]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /--analyzer: unknown analyzer "x.Y"/);
  });
});

Deno.test("analyze: errors name what is missing (no files, no meshd, xDS flags, bad levels)", async () => {
  const noFiles = await meshctl(["analyze", "--use-orch=false"]);
  assert.equal(noFiles.code, 1);
  assert.match(noFiles.err, /--use-orch=false needs files/);
  const missing = await meshctl(["analyze", "--use-orch=false", "/nonexistent/x.yaml"]);
  assert.equal(missing.code, 79);
  assert.match(missing.out, /IST0106\] Schema validation error: cannot read: no such file or directory/);
  const noMeshd = await meshctl(["analyze", "--debug-address", "127.0.0.1:1"]);
  assert.equal(noMeshd.code, 1);
  assert.match(noMeshd.err, /cannot reach meshd's debug interface \(--debug-address\) at 127\.0\.0\.1:1/);
  const xds = await meshctl(["analyze", "--xds-address", "127.0.0.1:1", "--plaintext", "--timeout", "2s"]);
  assert.equal(xds.code, 1);
  assert.match(
    xds.err,
    /meshd over xDS \(--xds-address, plain text\) at 127\.0\.0\.1:1: istio\.io\/debug\/(configz|registryz|mesh): UNAVAILABLE/,
  );
  const level = await meshctl(["analyze", "--use-orch=false", "--failure-threshold", "Fatal", "x"]);
  assert.equal(level.code, 1);
  assert.match(level.err, /--failure-threshold: unknown level "Fatal"; use Info, Warning, Error/);
});

Deno.test("analyze: Istio's ingress SNI passthrough task (PASSTHROUGH Gateway, tls route) has no issues", async () => {
  const r = await meshctl(["analyze", "--use-orch=false", "tests/fixtures/istio/ingress-sni-passthrough"]);
  assert.equal(r.code, 0, r.out + r.err);
  assert.equal(r.out, "");
  assert.match(r.err, /✔ No validation issues found when analyzing/);
});
