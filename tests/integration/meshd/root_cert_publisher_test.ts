/**
 * meshd/namespace_controller's RootCertPublisher in process on the test API server (deploy/lab/kube_api),
 * through meshd's own API client: what the CLI test cannot reach at once. A change of the roots rewrites
 * every namespace's ConfigMap (and a key someone added stays); a Terminating namespace is left alone; a
 * namespace deleted while its ConfigMap is being created is no failure; after stop() nothing is written
 * and nothing is left running (the sanitizers check it).
 */
import assert from "node:assert/strict";
import { startKubeApi } from "../../../deploy/lab/kube_api/mod.ts";
import { loadKubeConfig } from "../../../meshd/kube_source/kube_config.ts";
import { RootCertPublisher, type RootsSource } from "../../../meshd/namespace_controller/mod.ts";
import { ApiClient } from "../../../shared/internal/kube/api_client.ts";

const root = (n: number) => `-----BEGIN CERTIFICATE-----\nroot${n}\n-----END CERTIFICATE-----\n`;

/** Roots the test changes, as the CA's bundle changes after a rotation. */
class Roots implements RootsSource {
  trustBundlePem = root(1);
  readonly #listeners = new Set<() => void>();
  onBundleChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  set(pem: string): void {
    this.trustBundlePem = pem;
    for (const l of this.#listeners) l();
  }
}

async function until(cond: () => Promise<boolean>, what: string, logs: string[]): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what}; log:\n${logs.join("\n")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("root cert publisher: roots changed rewrite all; a Terminating namespace is skipped; nothing after stop", async () => {
  const server = await startKubeApi();
  const choice = loadKubeConfig(server.kubeconfig, {});
  if (!choice.ok) throw new Error(choice.reason);
  const api = new ApiClient(choice.config);
  const logs: string[] = [];
  let failures = 0;
  const roots = new Roots();
  const publisher = new RootCertPublisher({
    config: choice.config,
    api,
    watchNamespace: "",
    roots,
    logger: {
      info: (m) => logs.push(`info: ${m}`),
      warn: (m) => logs.push(`warn: ${m}`),
      error: (m) => logs.push(`error: ${m}`),
    },
    onFailure: () => failures++,
  });
  const ns = (name: string) =>
    api.json("POST", "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
    });
  const data = async (name: string): Promise<Record<string, string> | undefined> => {
    try {
      return (await api.json<{ data?: Record<string, string> }>(
        "GET",
        `/api/v1/namespaces/${name}/configmaps/mesh-ca-root-cert`,
      )).data;
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return undefined;
      throw e;
    }
  };
  let stopped = false;
  try {
    for (const n of ["a", "b"]) await ns(n);
    publisher.start();
    await publisher.synced;
    await until(async () => (await data("a"))?.["root-cert.pem"] === root(1), "no ConfigMap in a", logs);
    await until(async () => (await data("b"))?.["root-cert.pem"] === root(1), "no ConfigMap in b", logs);
    assert.equal(await data("kube-public"), undefined);

    // A key someone added to b stays through the rewrite.
    const cm = await api.json<{ data: Record<string, string> }>(
      "GET",
      "/api/v1/namespaces/b/configmaps/mesh-ca-root-cert",
    );
    await api.json("PUT", "/api/v1/namespaces/b/configmaps/mesh-ca-root-cert", {
      body: { ...cm, data: { ...cm.data, "extra.pem": "kept" } },
    });
    roots.set(root(1) + root(2));
    for (const n of ["a", "b"]) {
      await until(
        async () => (await data(n))?.["root-cert.pem"] === root(1) + root(2),
        `the roots' change did not reach ${n}`,
        logs,
      );
    }
    assert.equal((await data("b"))?.["extra.pem"], "kept");
    assert.ok(
      logs.includes(
        "info: the mesh root changed: updating mesh-ca-root-cert in 3 namespace(s)", /* a, b, default */
      ),
      logs.join("\n"),
    );

    // Terminating (the test server has no lifecycle: the phase is set through /status): left alone.
    const a = await api.json<Record<string, unknown>>("GET", "/api/v1/namespaces/a");
    await api.json("PUT", "/api/v1/namespaces/a/status", {
      body: { ...a, status: { phase: "Terminating" } },
    });
    await api.json("DELETE", "/api/v1/namespaces/a/configmaps/mesh-ca-root-cert");
    // A namespace made and deleted at once: a create may find it gone (404), which is no failure.
    await ns("brief");
    await api.json("DELETE", "/api/v1/namespaces/brief");
    await ns("c");
    await until(async () => (await data("c")) !== undefined, "no ConfigMap in c", logs);
    assert.equal(await data("a"), undefined, "written into a Terminating namespace");
    assert.equal(failures, 0, logs.join("\n"));

    await publisher.stop();
    stopped = true;
    await api.json("DELETE", "/api/v1/namespaces/c/configmaps/mesh-ca-root-cert");
    await ns("d");
    roots.set(root(3));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await data("c"), undefined, "written after stop");
    assert.equal(await data("d"), undefined, "written after stop");
  } finally {
    if (!stopped) await publisher.stop();
    await api.close();
    await server.stop();
  }
});
