/**
 * The root certificate ConfigMap `mesh-ca-root-cert` (meshd/namespace_controller), published by real
 * `meshd discovery --kubeconfig` replicas into the test API server (deploy/lab/kube_api), checked with
 * kubectl: it appears in existing and new namespaces holding the CA's roots (`/debug/rootCert`), a
 * deleted one is re-created, an edited one restored (keys someone added are kept), kube-system is
 * skipped, only the leader writes (the follower takes over when the leader stops); a root rotation
 * updates it; MESH_WATCH_NAMESPACE limits it to that namespace.
 */
import assert from "node:assert/strict";
import { commandMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { cluster, kubectl } from "./kube_support.ts";
import type { StartedKubeApi } from "../../../deploy/lab/kube_api/mod.ts";
import { type MeshdProcess, startMeshd, until } from "./meshd_process.ts";

const CM = "mesh-ca-root-cert";

const namespaces = (...names: string[]) =>
  names.map((n) => `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${n}}\n`).join("---\n");

/** The ConfigMap's data in `ns`, or undefined when there is none. */
async function rootMap(kubeconfig: string, ns: string): Promise<Record<string, string> | undefined> {
  try {
    return JSON.parse(await kubectl(kubeconfig, ["get", "configmap", CM, "-n", ns, "-o", "json"])).data ?? {};
  } catch (e) {
    if (/NotFound|not found/.test((e as Error).message)) return undefined;
    throw e;
  }
}

/**
 * A test on the test API server (namespace foo, and `namespaces` made) with the meshd replicas `fn`
 * starts into `ps`; all are stopped at the end.
 */
function replicaTest(
  name: string,
  extraNamespaces: string[],
  fn: (api: StartedKubeApi, ps: MeshdProcess[]) => Promise<void>,
): void {
  Deno.test(requires(commandMissing("kubectl"), {
    name,
    async fn() {
      const api = await cluster();
      const ps: MeshdProcess[] = [];
      try {
        await kubectl(api.kubeconfig, ["apply", "-f", "-"], namespaces(...extraNamespaces));
        await fn(api, ps);
      } finally {
        for (const p of ps) await p.stop();
        await api.stop();
      }
    },
  }));
}

/** The lines where a replica wrote a root ConfigMap. */
const writes = (p: MeshdProcess) =>
  p.output().split("\n").filter((l) => /ConfigMap \S+\/mesh-ca-root-cert: /.test(l));

replicaTest(
  "root ConfigMap: the leader publishes mesh-ca-root-cert in every namespace but kube-system, re-creates, restores; the follower writes nothing, then takes over",
  ["mesh-system", "kube-system", "bar"],
  async (api, ps) => {
    const k = (args: string[], stdin?: string) => kubectl(api.kubeconfig, args, stdin);
    const has = async (ns: string, roots: string) =>
      (await rootMap(api.kubeconfig, ns))?.["root-cert.pem"] === roots;
    const a = await startMeshd(api.kubeconfig, { POD_NAME: "meshd-a" });
    ps.push(a);
    await a.waitFor(/meshd-a is now the leader/, 10_000);
    const b = await startMeshd(api.kubeconfig, { POD_NAME: "meshd-b" });
    ps.push(b);
    const roots = await a.debug("/debug/rootCert");
    assert.match(roots, /^-----BEGIN CERTIFICATE-----/);
    assert.equal(await b.debug("/debug/rootCert"), roots, "the replicas share one root (mesh-ca-secret)");

    for (const ns of ["foo", "bar", "mesh-system"]) {
      await until(() => has(ns, roots), 10_000, `no ${CM} in ${ns}`, ps);
    }
    const cm = JSON.parse(await k(["get", "configmap", CM, "-n", "foo", "-o", "json"]));
    assert.deepEqual(cm.metadata.labels, { "mesh.io/config": "true" });
    assert.deepEqual(Object.keys(cm.data), ["root-cert.pem"]);
    assert.equal(await rootMap(api.kubeconfig, "kube-system"), undefined, "kube-system is skipped");

    // A namespace made later gets it.
    await k(["apply", "-f", "-"], namespaces("baz"));
    await until(() => has("baz", roots), 10_000, `no ${CM} in the new namespace baz`, ps);

    // Deleted: re-created.
    await k(["delete", "configmap", CM, "-n", "foo"]);
    await until(() => has("foo", roots), 10_000, `the deleted ${CM} in foo was not re-created`, ps);

    // Edited: root-cert.pem restored, a key someone added kept.
    await k([
      "patch",
      "configmap",
      CM,
      "-n",
      "bar",
      "--type=merge",
      "-p",
      JSON.stringify({ data: { "root-cert.pem": "tampered", "extra.pem": "kept" } }),
    ]);
    await until(
      async () => {
        const data = await rootMap(api.kubeconfig, "bar");
        return data?.["root-cert.pem"] === roots && data?.["extra.pem"] === "kept";
      },
      10_000,
      `the edited ${CM} in bar was not restored`,
      ps,
    );
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await rootMap(api.kubeconfig, "kube-system"), undefined);

    // Only the leader wrote: creates in foo, bar, mesh-system, baz, then foo again, and bar restored.
    assert.equal(writes(b).length, 0, b.output());
    const aWrites = writes(a);
    for (const ns of ["foo", "bar", "mesh-system", "baz"]) {
      assert.ok(aWrites.some((l) => l.includes(`ConfigMap ${ns}/${CM}: created with the mesh root`)), ns);
    }
    assert.equal(aWrites.filter((l) => l.includes(`ConfigMap foo/${CM}: created`)).length, 2, a.output());
    assert.ok(aWrites.some((l) => l.includes(`ConfigMap bar/${CM}: root-cert.pem set to the mesh root`)));

    // The leader stops and releases the Lease: b leads and keeps the ConfigMaps.
    assert.equal(await a.stop(), 0);
    await b.waitFor(/meshd-b is now the leader/, 10_000);
    await k(["delete", "configmap", CM, "-n", "baz"]);
    await until(() => has("baz", roots), 10_000, `the new leader did not re-create ${CM} in baz`, ps);
    assert.ok(writes(b).some((l) => l.includes(`ConfigMap baz/${CM}: created`)), b.output());
  },
);

replicaTest(
  "root ConfigMap: a rotation of the self-signed root updates it (new root and old)",
  ["mesh-system"],
  async (api, ps) => {
    // Due once 1% of its 3 min are gone: rotated at every 1 s check.
    const a = await startMeshd(api.kubeconfig, {
      POD_NAME: "meshd-a",
      CA_SELF_SIGNED_CA_CERT_TTL: "3m",
      CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL: "1s",
      CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE: "99",
      CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR: "false",
    });
    ps.push(a);
    await until(
      async () => {
        const data = await rootMap(api.kubeconfig, "foo");
        const count = (data?.["root-cert.pem"]?.match(/BEGIN CERTIFICATE/g) ?? []).length;
        return count >= 2 && data?.["root-cert.pem"] === await a.debug("/debug/rootCert");
      },
      20_000,
      "the ConfigMap in foo did not follow the root rotation",
      ps,
    );
    assert.match(a.output(), /the mesh root changed: updating mesh-ca-root-cert in \d+ namespace\(s\)/);
  },
);

replicaTest(
  "root ConfigMap: with MESH_WATCH_NAMESPACE=foo only foo gets it",
  ["mesh-system", "bar"],
  async (api, ps) => {
    const a = await startMeshd(api.kubeconfig, { POD_NAME: "meshd-a", MESH_WATCH_NAMESPACE: "foo" });
    ps.push(a);
    const roots = await a.debug("/debug/rootCert");
    await until(
      async () => (await rootMap(api.kubeconfig, "foo"))?.["root-cert.pem"] === roots,
      10_000,
      "no ConfigMap in foo",
      ps,
    );
    await kubectl(api.kubeconfig, ["apply", "-f", "-"], namespaces("baz"));
    await new Promise((r) => setTimeout(r, 1000));
    for (const ns of ["bar", "mesh-system", "baz"]) {
      assert.equal(await rootMap(api.kubeconfig, ns), undefined, `${ns} is outside MESH_WATCH_NAMESPACE`);
    }
  },
);
