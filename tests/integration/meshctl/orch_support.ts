/**
 * Test helpers of meshctl's orchestrator client: a test API server with a kubeconfig of two contexts
 * and a log of the requests it received.
 *
 * @module
 */
import { join } from "node:path";
import { type RequestLogEntry, type StartedKubeApi, startKubeApi } from "../../../deploy/lab/kube_api/mod.ts";
import { defaultOrchFlags, orchClient } from "../../../meshctl/orch/orch_client.ts";

/** A started server, its two-context kubeconfig, and what it received. */
export interface OrchTestApi {
  api: StartedKubeApi;
  /**
   * Contexts `with-ns` (namespace `foo`, the current one) and `bare` (no namespace), one cluster, the
   * admin token.
   */
  kubeconfig: string;
  log: RequestLogEntry[];
  stop(): Promise<void>;
}

/** Starts the test API server with namespaces `foo` and `mesh-system` and a two-context kubeconfig. */
export async function startOrchTestApi(): Promise<OrchTestApi> {
  const log: RequestLogEntry[] = [];
  const api = await startKubeApi({ requestLog: (e) => log.push(e) });
  const ns = api.server.objects.registry.find("", "v1", "namespaces")!;
  const admin = { username: "test", groups: ["system:masters"] };
  for (const name of ["foo", "mesh-system"]) {
    await api.server.objects.create(ns, "", { metadata: { name } }, admin);
  }
  const kubeconfig = join(api.dir, "two-contexts.yaml");
  await Deno.writeTextFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "c",
        cluster: { server: api.url, "certificate-authority-data": btoa(api.server.caPem) },
      }],
      users: [{ name: "admin", user: { token: api.server.token } }],
      contexts: [
        { name: "with-ns", context: { cluster: "c", user: "admin", namespace: "foo" } },
        { name: "bare", context: { cluster: "c", user: "admin" } },
      ],
      "current-context": "with-ns",
    }),
    { mode: 0o600 },
  );
  return { api, kubeconfig, log, stop: () => api.stop() };
}

/**
 * Creates pod `namespace/name` with `containers` and sets its status Running at 127.0.0.1 (the test
 * API server's port-forward then connects to 127.0.0.1).
 */
export async function runningLocalPod(
  t: OrchTestApi,
  namespace: string,
  name: string,
  containers: string[],
): Promise<void> {
  const client = orchClient({ ...defaultOrchFlags(), orchconfig: t.kubeconfig }, {});
  try {
    const path = `/api/v1/namespaces/${namespace}/pods`;
    const metadata = { name, namespace };
    await client.api.json("POST", path, {
      body: {
        apiVersion: "v1",
        kind: "Pod",
        metadata,
        spec: { containers: containers.map((c) => ({ name: c, image: c })) },
      },
    });
    await client.api.json("PUT", `${path}/${name}/status`, {
      body: { apiVersion: "v1", kind: "Pod", metadata, status: { phase: "Running", podIP: "127.0.0.1" } },
    });
  } finally {
    await client.close();
  }
}
