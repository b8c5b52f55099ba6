/**
 * A revision tag decides which meshd injects a new pod, end to end: two revisions installed by meshctl,
 * meshd's webhooks of each revision running (in-process, with their revisioned certificates), the test
 * API server calling them through the webhook configurations meshctl wrote (EndpointSlices stand in for
 * the endpoints controller; the caBundle is set as meshd's leader would), and `kubectl apply` of a pod
 * in a namespace labelled with the tag, before and after the tag is repointed.
 */
import assert from "node:assert/strict";
import { kubectlMissing, kubectlOk } from "../../../deploy/lab/kube_api/test_support.ts";
import { startCa, tempDir } from "../../../meshd/ca/test_support.ts";
import type { RunningWebhooks } from "../../../meshd/webhooks/mod.ts";
import { httpbinPod } from "../../../meshd/webhooks/test_support.ts";
import type { JsonObject } from "../../../shared/internal/inject/json.ts";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";
import { markReady, meshctl } from "./install_support.ts";
import { startOrchTestApi } from "./orch_support.ts";
import { startTestWebhooks } from "../meshd/webhook_support.ts";

Deno.test(requires(kubectlMissing(), {
  name: "tag repointing: a new pod in a namespace labelled with the tag is injected by the tag's revision",
  async fn() {
    const t = await startOrchTestApi();
    const kc = t.kubeconfig;
    const { dir, cleanup } = await tempDir();
    const ca = await startCa(dir);
    const running: RunningWebhooks[] = [];
    try {
      for (const rev of [[], ["-r", "canary"]]) {
        const pending: Promise<void>[] = [];
        const r = await meshctl(kc, ["install", "-y", "--set", "profile=minimal", ...rev], (out) => {
          const m = /Waiting for Deployment\/mesh-system\/([a-z-]+)/.exec(out.split("\n").at(-2) ?? "");
          if (m && pending.length === 0) pending.push(markReady(t.api, "mesh-system", m[1]));
        });
        await Promise.all(pending);
        assert.equal(r.code, 0, r.out + r.err);
      }
      const bundle = btoa(ca.trustBundlePem);
      for (const [service, revision] of [["meshd", undefined], ["meshd-canary", "canary"]] as const) {
        const hooks = await startTestWebhooks(ca, dir, revision);
        running.push(hooks);
        await kubectlOk(
          kc,
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "discovery.k8s.io/v1",
            kind: "EndpointSlice",
            metadata: {
              name: `${service}-0`,
              namespace: "mesh-system",
              labels: { "kubernetes.io/service-name": service },
            },
            addressType: "IPv4",
            ports: [{ name: "https-webhook", port: hooks.port, protocol: "TCP" }],
            endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
          }),
        );
        const name = revision ? `mesh-sidecar-injector-${revision}` : "mesh-sidecar-injector";
        const mwc = JSON.parse(
          await kubectlOk(kc, ["get", "mutatingwebhookconfiguration", name, "-o", "json"]),
        );
        const ops = (mwc.webhooks as unknown[]).map((_, i) => ({
          op: "add",
          path: `/webhooks/${i}/clientConfig/caBundle`,
          value: bundle,
        }));
        await kubectlOk(kc, [
          "patch",
          "mutatingwebhookconfiguration",
          name,
          "--type",
          "json",
          "-p",
          JSON.stringify(ops),
        ]);
      }
      await kubectlOk(
        kc,
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name: "bar", labels: { "mesh.io/rev": "prod" } },
        }),
      );

      const injectedBy = async (podName: string): Promise<{ revision: string; discovery: string }> => {
        const pod = httpbinPod();
        const meta = pod.metadata as JsonObject;
        delete meta.generateName;
        delete meta.ownerReferences;
        meta.name = podName;
        meta.namespace = "bar";
        await kubectlOk(kc, ["apply", "-f", "-"], JSON.stringify(pod));
        const stored = JSON.parse(await kubectlOk(kc, ["get", "pod", podName, "-n", "bar", "-o", "json"]));
        const status = JSON.parse(stored.metadata.annotations?.["sidecar.mesh.io/status"] ?? "{}");
        const proxy = stored.spec.containers.find((c: JsonObject) => c.name === "mesh-proxy");
        const discovery = (proxy?.args as string[] | undefined)?.find((a) =>
          a.startsWith("--discoveryAddress=")
        ) ?? "";
        return { revision: status.revision ?? "(not injected)", discovery };
      };

      assert.equal(
        (await injectedBy("before-tag")).revision,
        "(not injected)",
        "no webhook selects prod yet",
      );
      const set = await meshctl(kc, ["tag", "set", "prod", "--revision", "canary"]);
      assert.equal(set.code, 0, set.err);
      assert.deepEqual(await injectedBy("p1"), {
        revision: "canary",
        discovery: "--discoveryAddress=meshd-canary.mesh-system.svc:15012",
      });
      const repoint = await meshctl(kc, ["tag", "set", "prod", "--revision", "default", "--overwrite"]);
      assert.equal(repoint.code, 0, repoint.err);
      assert.deepEqual(await injectedBy("p2"), {
        revision: "default",
        discovery: "--discoveryAddress=meshd.mesh-system.svc:15012",
      });
    } finally {
      for (const h of running) await h.stop();
      await ca.stop();
      await cleanup();
      await t.stop();
    }
  },
}));
