/**
 * Test helpers of meshctl's orchestrator client: a test API server with a kubeconfig of two contexts
 * and a log of the requests it received.
 *
 * @module
 */
import { join } from "node:path";
import { type RequestLogEntry, type StartedKubeApi, startKubeApi } from "../../../deploy/lab/kube_api/mod.ts";

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
