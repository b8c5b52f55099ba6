import assert from "node:assert/strict";
import { join } from "node:path";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { kubectlMissing, startTestCluster, type TestCluster } from "./cluster_support.ts";

const OBJECTS = `apiVersion: v1
kind: Namespace
metadata: {name: mesh-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: foo}
---
apiVersion: v1
kind: Pod
metadata:
  name: httpbin-6f4d8f7b9c-x1
  namespace: foo
  labels: {app: httpbin, pod-template-hash: 6f4d8f7b9c}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: httpbin-6f4d8f7b9c, uid: r-1}]
spec: {containers: [{name: httpbin, image: x}, {name: mesh-proxy, image: y}]}
---
apiVersion: v1
kind: Pod
metadata: {name: dns, namespace: kube-system}
spec: {containers: [{name: coredns, image: z}]}
---
apiVersion: v1
kind: Secret
metadata: {name: cacerts, namespace: mesh-system}
stringData: {key.pem: very-secret}
`;

async function tarList(archive: string): Promise<string[]> {
  const out = await new Deno.Command("tar", { args: ["-tzf", archive] }).output();
  assert.ok(out.success);
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l !== "" && !l.endsWith("/")).sort();
}

async function tarRead(archive: string, file: string): Promise<string> {
  const out = await new Deno.Command("tar", { args: ["-xzOf", archive, `./${file}`] }).output();
  assert.ok(out.success, file);
  return new TextDecoder().decode(out.stdout);
}

async function withReport(fn: (c: TestCluster, dir: string) => Promise<void>): Promise<void> {
  const c = await startTestCluster();
  const dir = await Deno.makeTempDir({ prefix: "bug-report-test-" });
  try {
    await c.apply(OBJECTS);
    await fn(c, dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await c.stop();
  }
}

Deno.test(requires(kubectlMissing(), {
  name: "bug-report: objects and the selected containers' logs into an archive; secrets redacted; dry run",
  async fn() {
    await withReport(async (c, dir) => {
      const dry = await c.meshctl(["bug-report", "--dry-run", "--include", "foo/httpbin//app=httpbin"]);
      assert.equal(dry.code, 0, dry.err);
      const logs = dry.out.split("\n").filter((l) => l.includes("/log"));
      assert.deepEqual(logs, [
        "GET /api/v1/namespaces/foo/pods/httpbin-6f4d8f7b9c-x1/log?container=httpbin -> logs/foo/httpbin-6f4d8f7b9c-x1/httpbin.log",
        "GET /api/v1/namespaces/foo/pods/httpbin-6f4d8f7b9c-x1/log?container=mesh-proxy -> logs/foo/httpbin-6f4d8f7b9c-x1/mesh-proxy.log",
      ]);
      assert.deepEqual([...Deno.readDirSync(dir)], [], "a dry run writes nothing");

      const r = await c.meshctl(["bug-report", "--output-dir", dir, "--exclude", "/////mesh-proxy"]);
      assert.equal(r.code, 0, r.err);
      const archive = join(dir, "bug-report.tar.gz");
      assert.match(r.out, new RegExp(`Creating an archive at ${archive}`));
      const files = await tarList(archive);
      for (
        const f of [
          "./cluster/version.json",
          "./cluster/pods.yaml",
          "./cluster/mesh-system/secrets.yaml",
          "./errors.txt",
        ]
      ) {
        assert.ok(files.includes(f), `${f} in ${files.join(" ")}`);
      }
      // The test API server serves no pods/log: the selected log is an error; kube-system (the default
      // exclude is replaced by --exclude here) and the excluded container are not fetched at all.
      const errors = await tarRead(archive, "errors.txt");
      assert.match(errors, /logs\/foo\/httpbin-6f4d8f7b9c-x1\/httpbin\.log: 404/);
      assert.match(errors, /logs\/kube-system\/dns\/coredns\.log: 404/);
      assert.doesNotMatch(errors, /mesh-proxy/);
      const secrets = await tarRead(archive, "cluster/mesh-system/secrets.yaml");
      assert.match(secrets, /redacted: --full-secrets/);
      assert.doesNotMatch(
        secrets,
        /dmVyeS1zZWNyZXQ=|very-secret/,
        "nor in stringData or kubectl's last-applied copy",
      );

      const full = await c.meshctl(["bug-report", "--output-dir", dir, "--full-secrets"]);
      assert.equal(full.code, 0, full.err);
      assert.match(
        await tarRead(archive, "cluster/mesh-system/secrets.yaml"),
        /dmVyeS1zZWNyZXQ=|very-secret/,
      );
      assert.doesNotMatch(await tarRead(archive, "errors.txt"), /kube-system/, "the default exclude");
    });
  },
}));

Deno.test(requires(kubectlMissing(), {
  name: "bug-report: on --timeout the archive keeps what it has; bad ranges and version",
  async fn() {
    await withReport(async (c, dir) => {
      const r = await c.meshctl(["bug-report", "--output-dir", dir, "--timeout", "1ns"]);
      assert.equal(r.code, 0, r.err);
      assert.match(r.err, /--timeout 1ns expired: the archive holds what was fetched/);
      const errors = await tarRead(join(dir, "bug-report.tar.gz"), "errors.txt");
      assert.match(errors, /cluster\/pods\.yaml: not fetched: --timeout expired/);

      const both = await c.meshctl([
        "bug-report",
        "--start-time",
        "2026-01-01T00:00:00Z",
        "--duration",
        "1h",
      ]);
      assert.equal(both.code, 1);
      assert.match(both.err, /--start-time and --duration exclude each other/);
      const bad = await c.meshctl(["bug-report", "--end-time", "yesterday"]);
      assert.match(bad.err, /--end-time: "yesterday" is not a time/);

      const v = await c.meshctl(["bug-report", "version", "-o", "json"]);
      assert.equal(typeof JSON.parse(v.out).clientVersion.deno, "string");
      assert.match((await c.meshctl(["bug-report", "version"])).out, /^client version: /);
    });
  },
}));
