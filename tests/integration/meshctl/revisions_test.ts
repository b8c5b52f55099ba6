/**
 * Two control plane revisions side by side and revision tags (seed 002 "tag"), against the test API
 * server: which revision's webhook would inject a new pod is read from the webhook configurations'
 * selectors, as the API server evaluates them (install_support.ts `injectingServices`).
 */
import assert from "node:assert/strict";
import { kubectlMissing, kubectlOk } from "../../../deploy/lab/kube_api/test_support.ts";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { injectingServices, markReady, meshctl } from "./install_support.ts";
import { startOrchTestApi } from "./orch_support.ts";

async function install(
  kubeconfig: string,
  api: Parameters<typeof markReady>[0],
  args: string[],
): Promise<void> {
  const pending: Promise<void>[] = [];
  const seen = new Set<string>();
  const r = await meshctl(kubeconfig, ["install", "-y", "--set", "profile=minimal", ...args], (out) => {
    for (const m of out.matchAll(/Waiting for Deployment\/mesh-system\/([a-z0-9-]+)/g)) {
      if (!seen.has(m[1])) {
        seen.add(m[1]);
        pending.push(markReady(api, "mesh-system", m[1]));
      }
    }
  });
  await Promise.all(pending);
  assert.equal(r.code, 0, r.out + r.err);
}

Deno.test(requires(kubectlMissing(), {
  name: "revisions side by side; tags choose which revision injects; uninstall -r removes one revision only",
  fn: async () => {
    const t = await startOrchTestApi();
    try {
      await install(t.kubeconfig, t.api, []);
      await install(t.kubeconfig, t.api, ["-r", "canary"]);
      const deployments = await kubectlOk(t.kubeconfig, [
        "get",
        "deployment",
        "-n",
        "mesh-system",
        "-L",
        "mesh.io/rev",
      ]);
      assert.match(deployments, /^meshd\s.*\sdefault$/m);
      assert.match(deployments, /^meshd-canary\s.*\scanary$/m);
      const svc = JSON.parse(
        await kubectlOk(t.kubeconfig, ["get", "service", "meshd", "-n", "mesh-system", "-o", "json"]),
      );
      assert.equal(
        svc.spec.selector["mesh.io/rev"],
        "default",
        "the default Service does not select canary pods",
      );

      assert.deepEqual(await injectingServices(t.api, { "mesh-injection": "enabled" }), ["meshd"]);
      assert.deepEqual(await injectingServices(t.api, { "mesh.io/rev": "canary" }), ["meshd-canary"]);
      assert.deepEqual(await injectingServices(t.api, {}, { "mesh.io/rev": "canary" }), ["meshd-canary"]);
      assert.deepEqual(await injectingServices(t.api, { "mesh.io/rev": "prod" }), []);

      const set = await meshctl(t.kubeconfig, ["tag", "set", "prod", "--revision", "canary"]);
      assert.equal(set.code, 0, set.err);
      assert.deepEqual(await injectingServices(t.api, { "mesh.io/rev": "prod" }), ["meshd-canary"]);
      await kubectlOk(t.kubeconfig, ["label", "namespace", "foo", "mesh.io/rev=prod"]);
      const list = await meshctl(t.kubeconfig, ["tag", "list"]);
      assert.match(list.out, /^TAG\s+REVISION\s+NAMESPACES\nprod\s+canary\s+foo\n$/);
      const json = JSON.parse((await meshctl(t.kubeconfig, ["tag", "list", "-o", "json"])).out);
      assert.deepEqual(json, [{
        tag: "prod",
        revision: "canary",
        webhook: "mesh-revision-tag-prod",
        namespaces: ["foo"],
      }]);

      const noOverwrite = await meshctl(t.kubeconfig, ["tag", "set", "prod", "--revision", "default"]);
      assert.equal(noOverwrite.code, 1);
      assert.match(
        noOverwrite.err,
        /revision tag "prod" already points to revision "canary" and --overwrite is false/,
      );
      const named = await meshctl(t.kubeconfig, ["tag", "set", "canary", "--revision", "default"]);
      assert.match(
        named.err,
        /cannot create revision tag "canary": found an existing control plane revision/,
      );
      const missing = await meshctl(t.kubeconfig, ["tag", "set", "x", "--revision", "nope"]);
      assert.match(
        missing.err,
        /cannot find a MutatingWebhookConfiguration of revision "nope" \(installed: (default, canary|canary, default)\)/,
      );

      const gen = await meshctl(t.kubeconfig, [
        "tag",
        "generate",
        "prod",
        "--revision",
        "default",
        "--overwrite",
      ]);
      assert.match(gen.out, /name: mesh-revision-tag-prod/);
      assert.deepEqual(
        await injectingServices(t.api, { "mesh.io/rev": "prod" }),
        ["meshd-canary"],
        "generate writes nothing",
      );
      const repoint = await meshctl(t.kubeconfig, [
        "tag",
        "set",
        "prod",
        "--revision",
        "default",
        "--overwrite",
      ]);
      assert.equal(repoint.code, 0, repoint.err);
      assert.deepEqual(await injectingServices(t.api, { "mesh.io/rev": "prod" }), ["meshd"]);

      const def = await meshctl(t.kubeconfig, ["tag", "set", "default", "--revision", "canary"]);
      assert.equal(def.code, 0, def.err);
      assert.match(def.out, /Deactivated mesh-sidecar-injector/);
      assert.deepEqual(await injectingServices(t.api, { "mesh-injection": "enabled" }), ["meshd-canary"]);
      assert.deepEqual(await injectingServices(t.api, { "istio-injection": "enabled" }), ["meshd-canary"]);
      assert.deepEqual(await injectingServices(t.api, {}, { "sidecar.mesh.io/inject": "true" }), [
        "meshd-canary",
      ]);
      const validator = JSON.parse(
        await kubectlOk(t.kubeconfig, [
          "get",
          "validatingwebhookconfiguration",
          "mesh-default-validator",
          "-o",
          "json",
        ]),
      );
      assert.equal(validator.webhooks[0].clientConfig.service.name, "meshd-canary");

      const kept = await meshctl(t.kubeconfig, ["tag", "remove", "prod"]);
      assert.equal(kept.code, 1, "namespace foo references prod: removal needs -y");
      const removed = await meshctl(t.kubeconfig, ["tag", "remove", "prod", "-y"]);
      assert.equal(removed.code, 0, removed.err);
      assert.deepEqual(await injectingServices(t.api, { "mesh.io/rev": "prod" }), []);

      const op = `${t.api.dir}/canary.yaml`;
      await Deno.writeTextFile(
        op,
        "apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  revision: canary\n",
      );
      const byFile = await meshctl(t.kubeconfig, ["uninstall", "-f", op, "--dry-run"]);
      assert.match(byFile.out, /would remove Deployment mesh-system\/meshd-canary\n/);
      assert.doesNotMatch(
        byFile.out,
        /meshd\n|mesh-sidecar-injector\n|CustomResourceDefinition/,
        "only canary's objects",
      );
      const un = await meshctl(t.kubeconfig, ["uninstall", "-r", "canary", "-y"]);
      assert.equal(un.code, 0, un.err);
      const after = await kubectlOk(t.kubeconfig, ["get", "deployment", "-n", "mesh-system", "-o", "name"]);
      assert.equal(after.trim(), "deployment.apps/meshd");
      const hooks = await kubectlOk(t.kubeconfig, ["get", "mutatingwebhookconfiguration", "-o", "name"]);
      assert.equal(
        hooks.trim(),
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/mesh-sidecar-injector",
      );
    } finally {
      await t.stop();
    }
  },
}));
