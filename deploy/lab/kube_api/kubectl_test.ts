import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { startKubeApi } from "./mod.ts";
import { kubectl, kubectlMissing, kubectlOk, until } from "./test_support.ts";
import { isObject, type KubeObject } from "./types.ts";

const repo = new URL("../../../", import.meta.url).pathname;
const samples = `${repo}tests/fixtures/istio_samples/`;

function yamlObject(text: string): KubeObject {
  const v = parseYaml(text);
  if (!isObject(v)) throw new Error(`not a YAML object: ${text.slice(0, 80)}`);
  return v;
}

/** Two CRDs of Istio's networking.istio.io group, enough to store the samples' Gateway and VirtualService. */
function istioCrd(kind: string, plural: string): string {
  return JSON.stringify({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.networking.istio.io` },
    spec: {
      group: "networking.istio.io",
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      scope: "Namespaced",
      versions: ["v1", "v1beta1", "v1alpha3"].map((name) => ({
        name,
        served: true,
        storage: name === "v1",
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
      })),
    },
  });
}

Deno.test(requires(kubectlMissing(), {
  name:
    "kubectl: Istio's samples (httpbin, curl, sleep, httpbin-gateway) apply, read back, re-apply, label and delete",
  async fn() {
    const api = await startKubeApi();
    const kc = api.kubeconfig;
    try {
      const typed = await kubectl(kc, ["create", "namespace", "demo"]);
      assert.match(
        typed.stderr,
        /vnd\.kubernetes\.protobuf is not implemented by this test API server; use kubectl apply -f/,
      );
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "demo" } }),
      );
      const dry = await kubectl(kc, [
        "apply",
        "-n",
        "demo",
        "--dry-run=server",
        "-f",
        samples + "httpbin.yaml",
      ]);
      assert.match(dry.stderr, /dryRun is not implemented by this test API server/);
      assert.equal(
        (await kubectlOk(kc, ["get", "-n", "demo", "all", "-o", "name"])).trim(),
        "",
        "a dry run wrote nothing",
      );
      for (const f of ["httpbin.yaml", "curl.yaml", "sleep.yaml"]) {
        const out = await kubectlOk(kc, ["apply", "-n", "demo", "-f", samples + f]);
        assert.match(out, /deployment\.apps\/\w+ created/);
      }
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        istioCrd("Gateway", "gateways") + "\n" + istioCrd("VirtualService", "virtualservices"),
      );
      assert.match(
        await kubectlOk(kc, ["apply", "-n", "demo", "-f", samples + "httpbin-gateway.yaml"]),
        /gateway\.networking\.istio\.io\/httpbin-gateway created/,
      );

      const dep = yamlObject(
        await kubectlOk(kc, ["get", "-n", "demo", "deployment", "httpbin", "-o", "yaml"]),
      );
      assert.equal((dep.metadata as KubeObject).generation, 1);
      assert.ok(
        ((dep.metadata as KubeObject).annotations as KubeObject)[
          "kubectl.kubernetes.io/last-applied-configuration"
        ],
      );
      const svc = yamlObject(await kubectlOk(kc, ["get", "-n", "demo", "svc", "httpbin", "-o", "yaml"]));
      assert.match(String((svc.spec as KubeObject).clusterIP), /^10\.96\./);
      const vs = yamlObject(
        await kubectlOk(kc, ["get", "-n", "demo", "virtualservice", "httpbin", "-o", "yaml"]),
      );
      assert.deepEqual((vs.spec as KubeObject).gateways, ["httpbin-gateway"]);

      // Re-applying an unchanged file changes nothing; a changed image is a strategic merge patch.
      assert.match(
        await kubectlOk(kc, ["apply", "-n", "demo", "-f", samples + "httpbin.yaml"]),
        /deployment\.apps\/httpbin unchanged/,
      );
      const changed = (await Deno.readTextFile(samples + "httpbin.yaml")).replace(
        /image: .*httpbin.*/,
        "image: example/httpbin:v2",
      );
      assert.match(
        await kubectlOk(kc, ["apply", "-n", "demo", "-f", "-"], changed),
        /deployment\.apps\/httpbin configured/,
      );
      const dep2 = yamlObject(
        await kubectlOk(kc, ["get", "-n", "demo", "deployment", "httpbin", "-o", "yaml"]),
      );
      const containers = (((dep2.spec as KubeObject).template as KubeObject).spec as KubeObject)
        .containers as KubeObject[];
      assert.equal(containers.length, 1);
      assert.equal(containers[0].image, "example/httpbin:v2");
      assert.ok(Array.isArray(containers[0].ports), "the merge by container name kept the ports");
      assert.equal((dep2.metadata as KubeObject).generation, 2);

      await kubectlOk(kc, ["label", "-n", "demo", "deployment", "httpbin", "tier=web"]);
      assert.equal(
        (await kubectlOk(kc, ["get", "-n", "demo", "deploy", "-l", "tier=web", "-o", "name"])).trim(),
        "deployment.apps/httpbin",
      );
      assert.equal(
        (await kubectlOk(kc, ["get", "-n", "demo", "deploy", "-l", "tier notin (web)", "-o", "name"])).trim()
          .split("\n").sort().join(" "),
        "deployment.apps/curl deployment.apps/sleep",
      );
      assert.equal(
        (await kubectlOk(kc, [
          "get",
          "-n",
          "demo",
          "sa",
          "--field-selector",
          "metadata.name!=default",
          "-o",
          "name",
        ])).trim()
          .split("\n").sort().join(" "),
        "serviceaccount/curl serviceaccount/httpbin serviceaccount/sleep",
      );
      assert.match(
        await kubectlOk(kc, ["scale", "-n", "demo", "deployment", "httpbin", "--replicas=3"]),
        /scaled/,
      );
      assert.equal(
        await kubectlOk(kc, ["get", "-n", "demo", "deploy", "httpbin", "-o", "jsonpath={.spec.replicas}"]),
        "3",
      );
      const all = await kubectlOk(kc, ["get", "all", "-n", "demo", "-o", "name"]);
      assert.match(all, /service\/httpbin/);
      assert.match(all, /deployment\.apps\/httpbin/);
      const refused = await kubectl(kc, ["label", "-n", "demo", "deployment", "httpbin", "tier=db"]);
      assert.notEqual(refused.code, 0, "label without --overwrite must be refused by kubectl");

      assert.match(
        await kubectlOk(kc, ["delete", "-n", "demo", "-f", samples + "curl.yaml"]),
        /deployment\.apps "curl" deleted/,
      );
      const gone = await kubectl(kc, ["get", "-n", "demo", "deployment", "curl"]);
      assert.equal(gone.code, 1);
      assert.match(gone.stderr, /NotFound.*deployments\.apps "curl" not found/);
      await kubectlOk(kc, ["delete", "namespace", "demo"]);
      assert.equal((await kubectlOk(kc, ["get", "deploy", "-A", "-o", "name"])).trim(), "");
    } finally {
      await api.stop();
    }
  },
}));

Deno.test(requires(kubectlMissing(), {
  name: "kubectl: the mesh's CRDs from deploy/crds/ register, serve their kinds, and get -w streams changes",
  async fn() {
    const api = await startKubeApi();
    const kc = api.kubeconfig;
    try {
      assert.match(
        await kubectlOk(kc, ["apply", "-f", `${repo}deploy/crds/`]),
        /authorizationpolicies\.security\.mesh\.io created/,
      );
      const resources = await kubectlOk(kc, [
        "api-resources",
        "--api-group",
        "security.mesh.io",
        "-o",
        "name",
      ]);
      assert.match(resources, /authorizationpolicies\.security\.mesh\.io/);
      const watch = new Deno.Command("/usr/bin/kubectl", {
        args: [
          "--kubeconfig",
          kc,
          "get",
          "authorizationpolicies",
          "-w",
          "--request-timeout",
          "30s",
          "-o",
          "name",
        ],
        stdout: "piped",
        stderr: "piped",
        env: { HOME: await Deno.makeTempDir({ prefix: "kubectl-home-" }) },
      }).spawn();
      await until(
        () => api.server.objects.store.hub.listenerCount > 0,
        10_000,
        "kubectl get -w started watching",
      );
      const policy = {
        apiVersion: "security.mesh.io/v1",
        kind: "AuthorizationPolicy",
        metadata: { name: "deny-get", namespace: "default" },
        spec: { action: "DENY", rules: [{ to: [{ operation: { methods: ["GET"] } }] }] },
      };
      await kubectlOk(kc, ["apply", "-f", "-"], JSON.stringify(policy));
      await kubectlOk(kc, ["delete", "authorizationpolicy", "deny-get"]);
      // kubectl prints one line per event; stop it once both are there (or fail after the deadline).
      const reader = watch.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let text = "";
      while (text.split("\n").length < 3) {
        const { value, done } = await within(reader.read(), 20_000, "two lines from kubectl get -w");
        if (done) break;
        text += value;
      }
      watch.kill("SIGTERM");
      await reader.cancel();
      await watch.stderr.cancel();
      await watch.status;
      const lines = text.trim().split("\n");
      assert.deepEqual(lines, [
        "authorizationpolicy.security.mesh.io/deny-get",
        "authorizationpolicy.security.mesh.io/deny-get",
      ]);
      assert.match(
        await kubectlOk(kc, ["delete", "crd", "authorizationpolicies.security.mesh.io"]),
        /deleted/,
      );
      const after = await kubectl(kc, ["get", "authorizationpolicies.security.mesh.io"]);
      assert.notEqual(after.code, 0, "the kind is no longer served");
    } finally {
      await api.stop();
    }
  },
}));
