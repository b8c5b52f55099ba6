/**
 * The lab with its config in the test Kubernetes API server (`lab up --config-source kube`,
 * deploy/lab/kube_config.ts): the quickstart's topology, whose ServiceEntries, WorkloadGroups and
 * WorkloadEntries reach meshd only through `kubectl apply` (meshd runs with --kubeconfig and no
 * --configDir), then Istio's Mutual TLS Migration matrix with real curl and httpbin while policies change
 * through kubectl: STRICT in foo applied, patched to PERMISSIVE, an invalid edit refused by meshd (the
 * last good version kept in the data path), and the mesh-wide STRICT applied with `lab apply` (validated,
 * then kubectl). Lab name `lk<pid>`, subnet 10.248.0.0/24.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { labApply, labDown, labPaths, labUnavailable, labUp } from "../../deploy/lab/mod.ts";
import { expectStage, kubectl, SETTLE_MS } from "./lab_kube_support.ts";
import { commandMissing, httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const TOPOLOGY = join(ROOT, "deploy/lab/quickstart.yaml");
const QUICKSTART = join(ROOT, "deploy/quickstart");

const unavailable = labUnavailable() ?? httpbinMissing() ?? commandMissing("kubectl");

const PA_FOO = (spec: string) =>
  `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: ${spec}
`;

Deno.test(requires(unavailable, {
  name: "lab --config-source kube: the quickstart matrix with config made only through kubectl, changed live",
  async fn() {
    const name = `lk${Deno.pid}`;
    await labDown(name);
    try {
      const state = await labUp(TOPOLOGY, { name, subnet: "10.248.0.0/24", configSource: "kube" });
      const paths = labPaths(name);
      // No config directory: meshd's only source is the API server, written by kubectl.
      await assert.rejects(() => Deno.stat(paths.configDir), Deno.errors.NotFound);
      const meshd = state.processes.find((p) => p.role === "meshd");
      assert.ok(meshd);
      const argv = (await Deno.readTextFile(`/proc/${meshd.pid}/cmdline`)).split("\0");
      assert.ok(argv.includes(`--kubeconfig=${join(paths.kubeDir, "kubeconfig")}`), argv.join(" "));
      assert.ok(!argv.some((a) => a.startsWith("--configDir")), argv.join(" "));
      const objects = await kubectl(name, [
        "get",
        "serviceentries,workloadgroups,workloadentries",
        "-A",
        "-o",
        "name",
      ]);
      assert.deepEqual(
        objects.trim().split("\n").sort(),
        [
          ...["serviceentry", "serviceentry", "serviceentry"].map((k) => `${k}.networking.mesh.io/httpbin`),
          ...["httpbin", "httpbin", "sleep", "sleep"].map((n) => `workloadgroup.networking.mesh.io/${n}`),
          "workloadentry.networking.mesh.io/httpbin",
          "workloadentry.networking.mesh.io/sleep",
        ].sort(),
      );

      await expectStage(state, "no policy");
      await kubectl(name, ["apply", "-f", "-"], PA_FOO("{mtls: {mode: STRICT}}"));
      await expectStage(state, "STRICT in foo");
      await kubectl(name, [
        "patch",
        "peerauthentications.security.istio.io",
        "default",
        "-n",
        "foo",
        "--type=merge",
        "-p",
        `{"spec":{"mtls":{"mode":"PERMISSIVE"}}}`,
      ]);
      await expectStage(state, "no policy");

      // Invalid (portLevelMtls without a selector): the test API server has no validating webhook here,
      // so it is stored; meshd refuses it and keeps PERMISSIVE. Were it taken, foo would be STRICT.
      await kubectl(
        name,
        ["apply", "-f", "-"],
        PA_FOO(`{mtls: {mode: STRICT}, portLevelMtls: {"9999": {mode: DISABLE}}}`),
      );
      const log = join(paths.logs, "meshd.log");
      const rejected = "rejected: kubernetes:peerauthentications.security.istio.io/foo/default: ";
      const deadline = Date.now() + SETTLE_MS;
      while (!(await Deno.readTextFile(log)).includes(rejected)) {
        assert.ok(Date.now() < deadline, `meshd never rejected the invalid edit (${log})`);
        await new Promise((r) => setTimeout(r, 100));
      }
      await new Promise((r) => setTimeout(r, 500));
      await expectStage(state, "no policy");

      // The lab's own path in kube mode: validated as `meshctl validate`, then `kubectl apply -f`.
      assert.deepEqual(await labApply(name, [join(QUICKSTART, "peer_authentication_mesh_strict.yaml")]), [
        "peerauthentication.security.istio.io/default created",
      ]);
      await kubectl(name, ["apply", "-f", join(QUICKSTART, "peer_authentication_foo_strict.yaml")]);
      await expectStage(state, "STRICT mesh-wide");
    } finally {
      await labDown(name);
    }
  },
}));
