/**
 * kubectl applies the install manifests to the test API server (deploy/lab/kube_api) as an operator
 * would: CRDs first, then `kubectl apply -k`, and reads every object back. What this shows: kubectl 1.32
 * builds each request from the files, the CRDs register their kinds so that the WorkloadGroup applies,
 * and every field of every object reads back as written (the server may add defaults). What it cannot show: the test server does not check built-in
 * kinds against their schema (a misspelt field is stored), so the schema check is schema_check.ts.
 */
import assert from "node:assert/strict";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { startKubeApi } from "../lab/kube_api/mod.ts";
import { loadManifests, MANIFESTS_DIR } from "./manifests.ts";

const docs = await loadManifests();

/** Paths where `got` differs from `want`, ignoring fields the server added (defaults such as clusterIP). */
function differences(got: unknown, want: unknown, path: string): string[] {
  if (typeof want !== "object" || want === null) return got === want ? [] : [`${path}: ${got} != ${want}`];
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) return [`${path}: ${JSON.stringify(got)}`];
    return want.flatMap((w, i) => differences(got[i], w, `${path}[${i}]`));
  }
  if (typeof got !== "object" || got === null) return [`${path}: missing`];
  return Object.entries(want).flatMap(([k, w]) =>
    differences((got as Record<string, unknown>)[k], w, `${path}.${k}`)
  );
}

async function kubectl(kubeconfig: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("kubectl", {
    args: ["--kubeconfig", kubeconfig, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr);
  assert.ok(out.success, `kubectl ${args.join(" ")}: ${err}`);
  return new TextDecoder().decode(out.stdout);
}

Deno.test(
  requires(commandMissing("kubectl"), {
    name: "kubectl applies deploy/kubernetes to the test API server and reads every object back as written",
    async fn() {
      const api = await startKubeApi();
      try {
        const dir = MANIFESTS_DIR.pathname;
        await kubectl(api.kubeconfig, "apply", "-f", `${dir}crds.yaml`);
        const applied = (await kubectl(api.kubeconfig, "apply", "-k", dir)).trim().split("\n");
        assert.equal(applied.length, docs.length, applied.join("\n"));
        for (const d of docs) {
          const kind = String(d.object.kind);
          const group = String(d.object.apiVersion).split("/").slice(0, -1).join("/");
          const resource = group === "" ? kind.toLowerCase() : `${kind.toLowerCase()}.${group}`;
          const meta = d.object.metadata as { name: string; namespace?: string };
          const ns = meta.namespace === undefined ? [] : ["-n", meta.namespace];
          const got = JSON.parse(
            await kubectl(api.kubeconfig, "get", resource, meta.name, ...ns, "-o", "json"),
          );
          assert.deepEqual(differences(got, d.object, `${d.file}: ${kind} ${meta.name}`), []);
        }
      } finally {
        await api.stop();
      }
    },
  }),
);
