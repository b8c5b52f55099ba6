import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { startKubeApi } from "./mod.ts";
import { kubectl, kubectlMissing, settleClientTimers } from "./test_support.ts";

Deno.test(requires(kubectlMissing(), {
  name:
    "tokens: TokenRequest issues pod-bound tokens that TokenReview accepts for their audience only, until the pod is gone",
  async fn() {
    const api = await startKubeApi();
    try {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(api.kubeconfig);
      const core = kc.makeApiClient(k8s.CoreV1Api);
      const authn = kc.makeApiClient(k8s.AuthenticationV1Api);
      await core.createNamespacedServiceAccount({
        namespace: "default",
        body: { metadata: { name: "app" } },
      });
      const pod = await core.createNamespacedPod({
        namespace: "default",
        body: {
          metadata: { name: "app-1" },
          spec: { serviceAccountName: "app", containers: [{ name: "c", image: "x" }] },
        },
      });
      const issued = await core.createNamespacedServiceAccountToken({
        namespace: "default",
        name: "app",
        body: {
          spec: { audiences: ["mesh-ca"], boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "app-1" } },
        },
      });
      const token = issued.status?.token ?? "";
      assert.equal(token.split(".").length, 3);
      const review = async (audiences: string[], t = token): Promise<k8s.V1TokenReviewStatus | undefined> =>
        (await authn.createTokenReview({ body: { spec: { token: t, audiences } } })).status;

      const ok = await review(["mesh-ca"]);
      assert.equal(ok?.authenticated, true);
      assert.equal(ok?.user?.username, "system:serviceaccount:default:app");
      assert.deepEqual(ok?.user?.extra?.["authentication.kubernetes.io/pod-uid"], [pod.metadata?.uid]);
      assert.deepEqual(ok?.audiences, ["mesh-ca"]);
      assert.equal((await review(["other"]))?.authenticated, false);
      assert.equal((await review(["mesh-ca"], token.slice(0, -4) + "AAAA"))?.authenticated, false);

      // A token for the mesh CA is not an API credential; one for the API audience is.
      assert.equal((await kubectl(api.kubeconfig, ["--token", token, "get", "pods"])).code, 1);
      const apiToken = await core.createNamespacedServiceAccountToken({
        namespace: "default",
        name: "app",
        body: { spec: {} },
      });
      const asSa = await kubectl(api.kubeconfig, [
        "--token",
        apiToken.status?.token ?? "",
        "get",
        "pods",
        "-o",
        "name",
      ]);
      assert.equal(asSa.stdout.trim(), "pod/app-1");

      await core.deleteNamespacedPod({ namespace: "default", name: "app-1" });
      const afterDelete = await review(["mesh-ca"]);
      assert.equal(afterDelete?.authenticated, false);
      assert.match(afterDelete?.error ?? "", /pod default\/app-1 bound to the token has been deleted/);
    } finally {
      await api.stop();
      await settleClientTimers();
    }
  },
}));
