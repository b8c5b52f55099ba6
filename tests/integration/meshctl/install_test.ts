/**
 * meshctl install, upgrade, uninstall and manifest against the test API server (deploy/lab/kube_api),
 * checked with the real kubectl. The server runs no controllers: the tests play the Deployment
 * controller by setting each Deployment's status through /status (install_support.ts `markReady`).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { kubectlMissing, kubectlOk } from "../../../deploy/lab/kube_api/test_support.ts";
import { checkKubernetesObject } from "../../../deploy/kubernetes/schema_check.ts";
import { formatIssue, validateText } from "../../../shared/mod.ts";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { get, markReady, meshctl } from "./install_support.ts";
import { startOrchTestApi } from "./orch_support.ts";

const OWNED_CLUSTER_KINDS = "crd,namespace,clusterrole,clusterrolebinding,mutatingwebhookconfiguration," +
  "validatingwebhookconfiguration";

async function leftovers(kubeconfig: string): Promise<string[]> {
  const cluster = await kubectlOk(kubeconfig, [
    "get",
    OWNED_CLUSTER_KINDS,
    "-l",
    "operator.mesh.io/component",
    "-o",
    "name",
  ]);
  const selector = ["-A", "-l", "operator.mesh.io/component", "-o", "name"];
  const inNs = await kubectlOk(kubeconfig, [
    "get",
    "deployment,service,configmap,serviceaccount,role,rolebinding,pdb",
    ...selector,
  ]);
  // Without the CRD (not installed yet, or purged) the kind is not served, so nothing of it is left.
  const crd = cluster.includes("workloadgroups.networking.mesh.io")
    ? await kubectlOk(kubeconfig, ["get", "workloadgroups.networking.mesh.io", ...selector])
    : "";
  return [...cluster.split("\n"), ...inNs.split("\n"), ...crd.split("\n")].filter((l) => l.trim() !== "");
}

Deno.test("manifest generate: every profile and a revision pass the Kubernetes schema check and meshctl validate", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const args of [[], ["--set", "profile=demo"], ["--set", "profile=minimal"], ["-r", "canary"]]) {
      const r = await meshctl("/nonexistent", ["manifest", "generate", ...args]);
      assert.equal(r.code, 0, r.err);
      const docs = parseAllDocuments(r.out).map((d) => d.toJS() as Record<string, unknown>);
      assert.ok(docs.length > 10, args.join(" "));
      for (const o of docs) {
        if (String(o.apiVersion).includes("mesh.io")) continue;
        const meta = o.metadata as { name: string };
        assert.deepEqual(checkKubernetesObject(o), [], `${args.join(" ")}: ${o.kind} ${meta.name}`);
      }
      const mesh = validateText(r.out, "generated.yaml");
      assert.deepEqual(mesh.issues.map(formatIssue), [], args.join(" "));
      const file = join(dir, "m.yaml");
      await Deno.writeTextFile(file, r.out);
      const v = await meshctl("/nonexistent", ["validate", "-f", file]);
      assert.equal(v.code, 0, v.out + v.err);
    }
    const empty = await meshctl("/nonexistent", ["manifest", "generate", "--set", "profile=empty"]);
    assert.equal(empty.out, "");
    const bad = await meshctl("/nonexistent", [
      "manifest",
      "generate",
      "--set",
      "components.cni.enabled=true",
    ]);
    assert.equal(bad.code, 1);
    assert.match(bad.err, /spec\.components\.cni: unknown component/);
    const forced = await meshctl("/nonexistent", [
      "manifest",
      "generate",
      "--set",
      "components.cni.enabled=true",
      "--force",
    ]);
    assert.equal(forced.code, 0);
    assert.match(forced.err, /proceeding despite validation errors/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test(requires(kubectlMissing(), {
  name: "install waits for each component (progress lines), then uninstall --purge leaves nothing (kubectl)",
  fn: async () => {
    const t = await startOrchTestApi();
    try {
      // Without -y meshctl asks on a terminal; the suite's standard input is none, which answers no.
      if (!Deno.stdin.isTerminal()) {
        const unconfirmed = await meshctl(t.kubeconfig, ["install"]);
        assert.equal(unconfirmed.code, 1, "no terminal to confirm on, no -y");
        assert.match(unconfirmed.err, /Proceed\? \(y\/N\) no: standard input is not a terminal; use -y/);
      }
      const groupDry = await meshctl(t.kubeconfig, ["manifest", "--dry-run", "install", "-y"]);
      assert.match(groupDry.out, /dry run: nothing was changed/);
      const dry = await meshctl(t.kubeconfig, ["install", "--dry-run"]);
      assert.equal(dry.code, 0, dry.err);
      assert.match(dry.out, /would apply Deployment mesh-system\/meshd \(Meshd\)/);
      assert.deepEqual(await leftovers(t.kubeconfig), [], "--dry-run wrote nothing");
      const marked = new Set<string>();
      const pending: Promise<void>[] = [];
      const r = await meshctl(
        t.kubeconfig,
        ["install", "-y", "--readiness-timeout", "30s", "--verify"],
        (out) => {
          for (const name of ["meshd", "mesh-ingressgateway"]) {
            if (!marked.has(name) && out.includes(`Waiting for Deployment/mesh-system/${name} (0/`)) {
              marked.add(name);
              pending.push(markReady(t.api, "mesh-system", name));
            }
          }
        },
      );
      await Promise.all(pending);
      assert.equal(r.code, 0, r.out + r.err);
      assert.match(
        r.out,
        /- Processing resources for Meshd\. Waiting for Deployment\/mesh-system\/meshd \(0\/2 replicas ready\)/,
      );
      assert.match(
        r.out,
        /✔ Mesh core installed\n[^]*✔ Meshd installed\n[^]*✔ Ingress gateways installed\n✔ Installation complete/,
      );
      assert.match(r.out, /✔ Verified \d+ objects of 3 components/);
      const names = await leftovers(t.kubeconfig);
      for (
        const n of [
          "customresourcedefinition.apiextensions.k8s.io/workloadgroups.networking.mesh.io",
          "namespace/mesh-system",
          "mutatingwebhookconfiguration.admissionregistration.k8s.io/mesh-sidecar-injector",
          "deployment.apps/meshd",
          "workloadgroup.networking.mesh.io/mesh-ingressgateway",
        ]
      ) assert.ok(names.includes(n), `${n} in ${names.join(" ")}`);
      const again = await meshctl(t.kubeconfig, ["upgrade", "-y"]);
      assert.equal(again.code, 0, again.err);
      const none = await meshctl(t.kubeconfig, ["uninstall", "-y"]);
      assert.equal(none.code, 1);
      assert.match(
        none.err,
        /at least one of --revision \(or -r\), --filename \(or -f\) or --purge must be given/,
      );
      const dryUn = await meshctl(t.kubeconfig, ["uninstall", "--purge", "--dry-run"]);
      assert.match(dryUn.out, /would remove MutatingWebhookConfiguration mesh-sidecar-injector/);
      assert.equal((await leftovers(t.kubeconfig)).length, names.length, "--dry-run removed nothing");
      const un = await meshctl(t.kubeconfig, ["uninstall", "--purge", "-y", "-v"]);
      assert.equal(un.code, 0, un.err);
      assert.match(un.out, /Removed Deployment:mesh-system:meshd\./);
      assert.deepEqual(await leftovers(t.kubeconfig), []);
      assert.equal(await get(t.api, "/api/v1/namespaces/mesh-system"), undefined);
    } finally {
      await t.stop();
    }
  },
}));

Deno.test(requires(kubectlMissing(), {
  name:
    "install: -f files overlaid left to right, then --set; disabling a component prunes it; readiness timeout names the Deployment",
  fn: async () => {
    const t = await startOrchTestApi();
    const dir = await Deno.makeTempDir();
    try {
      const a = join(dir, "a.yaml"), b = join(dir, "b.yaml");
      await Deno.writeTextFile(
        a,
        "apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  profile: demo\n  meshConfig:\n    trustDomain: a.example\n",
      );
      await Deno.writeTextFile(
        b,
        "apiVersion: install.istio.io/v1alpha1\nkind: IstioOperator\nspec:\n  meshConfig:\n    trustDomain: b.example\n  components:\n    ingressGateway:\n      enabled: false\n",
      );
      const slow = await meshctl(t.kubeconfig, ["install", "-y", "-f", a, "--readiness-timeout", "1s"]);
      assert.equal(slow.code, 1);
      assert.match(
        slow.err,
        /Meshd: not ready within --readiness-timeout: Deployment\/mesh-system\/meshd \(0\/1 replicas ready\)/,
      );
      await markReady(t.api, "mesh-system", "meshd");
      const pending: Promise<void>[] = [];
      const demo = await meshctl(t.kubeconfig, ["install", "-y", "-f", a], (out) => {
        if (pending.length === 0 && out.includes("Waiting for Deployment/mesh-system/mesh-ingressgateway")) {
          pending.push(markReady(t.api, "mesh-system", "mesh-ingressgateway"));
        }
      });
      await Promise.all(pending);
      assert.equal(demo.code, 0, demo.err);
      const r = await meshctl(t.kubeconfig, [
        "install",
        "-y",
        "-f",
        a,
        "-f",
        b,
        "--set",
        "meshConfig.rootNamespace=mesh-system",
      ]);
      assert.equal(r.code, 0, r.err);
      const cm = JSON.parse(
        await kubectlOk(t.kubeconfig, ["get", "configmap", "mesh", "-n", "mesh-system", "-o", "json"]),
      );
      assert.match(cm.data.mesh, /trustDomain: b\.example/);
      const d = JSON.parse(
        await kubectlOk(t.kubeconfig, ["get", "deployment", "meshd", "-n", "mesh-system", "-o", "json"]),
      );
      assert.equal(d.spec.replicas, 1, "demo's replicas from a.yaml");
      assert.match(r.out, /Removed Deployment:mesh-system:mesh-ingressgateway \(no longer in the manifest\)/);
      const gw = await kubectlOk(t.kubeconfig, ["get", "deployment", "-n", "mesh-system", "-o", "name"]);
      assert.equal(gw.trim(), "deployment.apps/meshd");
    } finally {
      await Deno.remove(dir, { recursive: true });
      await t.stop();
    }
  },
}));
