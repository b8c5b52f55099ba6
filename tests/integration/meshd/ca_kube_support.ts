/**
 * Helpers for the CA's Kubernetes tests: meshd's own API client on the test API server
 * (deploy/lab/kube_api), namespaces, service accounts and their tokens (TokenRequest), Secrets, and a
 * real `meshd discovery --kubeconfig` on known loopback ports.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { ApiClient } from "../../../shared/internal/kube/api_client.ts";
import { loadKubeConfig } from "../../../meshd/kube_source/kube_config.ts";
import { discovery, type Run } from "../../../meshd/cli_test_support.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { type StartedKubeApi, startKubeApi } from "../../../deploy/lab/kube_api/mod.ts";

/** meshd's namespace in these tests (the --namespace default). */
export const MESHD_NS = "mesh-system";

/** An API client as meshd makes it, on `kubeconfig`. */
export function apiClient(kubeconfig: string): ApiClient {
  const choice = loadKubeConfig(kubeconfig, {});
  if (!choice.ok) throw new Error(choice.reason);
  return new ApiClient(choice.config);
}

/** Creates namespaces and service accounts (`ns/name`). */
export async function createAccounts(
  api: ApiClient,
  namespaces: string[],
  accounts: string[],
): Promise<void> {
  for (const name of namespaces) {
    await api.json("POST", "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
    });
  }
  for (const a of accounts) {
    const [namespace, name] = a.split("/");
    await api.json("POST", `/api/v1/namespaces/${namespace}/serviceaccounts`, {
      body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace } },
    });
  }
}

/** A TokenRequest for `ns/sa`, bound to pod `pod` if given; no audiences means the API server's own. */
export async function saToken(
  api: ApiClient,
  account: string,
  audiences?: string[],
  pod?: string,
): Promise<string> {
  const [namespace, name] = account.split("/");
  const r = await api.json<{ status: { token: string } }>(
    "POST",
    `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: {
          audiences,
          expirationSeconds: 600,
          ...(pod ? { boundObjectRef: { apiVersion: "v1", kind: "Pod", name: pod } } : {}),
        },
      },
    },
  );
  return r.status.token;
}

/** A Secret's data, decoded; undefined when it does not exist. */
export async function secretData(
  api: ApiClient,
  name: string,
): Promise<{ type?: string; data: Record<string, string> } | undefined> {
  try {
    const s = await api.json<{ type?: string; data?: Record<string, string> }>(
      "GET",
      `/api/v1/namespaces/${MESHD_NS}/secrets/${name}`,
    );
    const data = Object.fromEntries(
      Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
    );
    return { type: s.type, data };
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return undefined;
    throw e;
  }
}

/** The ports of a meshd started by {@link kubeMeshd}. */
export interface MeshdPorts {
  secure: number;
  http: number;
  monitoring: number;
}

/** GETs a path of meshd's debug interface as text. */
export async function debugText(ports: MeshdPorts, path: string): Promise<string> {
  const r = await within(fetch(`http://127.0.0.1:${ports.http}${path}`), 5000, path);
  return await r.text();
}

/**
 * Runs `meshd discovery --kubeconfig <kubeconfig>` (no --configDir) as a real process, with the debug
 * interface on, and `whileReady` while it serves.
 */
export async function kubeMeshd(
  kubeconfig: string,
  whileReady: (ports: MeshdPorts) => Promise<void>,
  vars: Record<string, string> = {},
): Promise<Run> {
  const ports = { secure: freePort(), http: freePort(), monitoring: freePort() };
  return await discovery(
    [
      ...["--configDir", "", "--kubeconfig", kubeconfig],
      ...["--secureGRPCAddr", `127.0.0.1:${ports.secure}`, "--httpAddr", `127.0.0.1:${ports.http}`],
      ...["--monitoringAddr", `127.0.0.1:${ports.monitoring}`],
    ],
    { vars: { ENABLE_DEBUG_ON_HTTP: "true", ...vars }, whileReady: () => whileReady(ports) },
  );
}

/** What {@link withKube} gives its test. */
export interface KubeTest {
  kube: StartedKubeApi;
  api: ApiClient;
  /** A new temporary directory, removed after the test. */
  tempDir(): Promise<string>;
}

/**
 * Runs `fn` against a new test API server holding meshd's namespace, `namespaces` and the service
 * accounts `accounts` (`ns/name`), with meshd's API client; stops and removes everything after.
 */
export async function withKube(
  namespaces: string[],
  accounts: string[],
  fn: (t: KubeTest) => Promise<void>,
): Promise<void> {
  const kube = await startKubeApi();
  const api = apiClient(kube.kubeconfig);
  const dirs: string[] = [];
  try {
    await createAccounts(api, [MESHD_NS, ...namespaces], accounts);
    await fn({
      kube,
      api,
      tempDir: async () => {
        dirs.push(await Deno.makeTempDir());
        return dirs[dirs.length - 1];
      },
    });
  } finally {
    for (const d of dirs) await Deno.remove(d, { recursive: true });
    await api.close();
    await kube.stop();
  }
}
