/**
 * Helpers for meshctl's orchestrator commands' tests: the test API server (deploy/lab/kube_api) with
 * the mesh's CRDs and Istio's aliases applied by the real kubectl, objects applied from YAML, and
 * meshctl run as a subprocess against its kubeconfig.
 *
 * @module
 */
import { type StartedKubeApi, startKubeApi } from "../../../deploy/lab/kube_api/mod.ts";
import { kubectlOk } from "../../../deploy/lab/kube_api/test_support.ts";
import { meshctl, type RunResult } from "../../../meshctl/test_support.ts";
import { istioCrd } from "../meshd/kube_support.ts";

export { kubectlMissing } from "../../../deploy/lab/kube_api/test_support.ts";

const CRDS = new URL("../../../deploy/crds/", import.meta.url).pathname;

/** Istio's groups and the kinds the mesh reads under them. */
const ISTIO_KINDS: [string, string, string][] = [
  ["security.istio.io", "PeerAuthentication", "peerauthentications"],
  ["security.istio.io", "AuthorizationPolicy", "authorizationpolicies"],
  ["networking.istio.io", "Gateway", "gateways"],
  ["networking.istio.io", "VirtualService", "virtualservices"],
];

/** A started API server with the CRDs, and ways to apply objects and run meshctl against it. */
export interface TestCluster {
  api: StartedKubeApi;
  /** `kubectl apply -f -` of YAML. */
  apply(yaml: string): Promise<void>;
  /** meshctl with `-c <kubeconfig>` first. */
  meshctl(args: string[]): Promise<RunResult>;
  stop(): Promise<void>;
}

/** Starts the server and applies deploy/crds/ and Istio's alias CRDs. */
export async function startTestCluster(): Promise<TestCluster> {
  const api = await startKubeApi();
  try {
    await kubectlOk(api.kubeconfig, ["apply", "-f", CRDS]);
    await kubectlOk(
      api.kubeconfig,
      ["apply", "-f", "-"],
      ISTIO_KINDS.map((k) => istioCrd(...k)).join("---\n"),
    );
  } catch (e) {
    await api.stop();
    throw e;
  }
  return {
    api,
    apply: async (yaml) => void await kubectlOk(api.kubeconfig, ["apply", "-f", "-"], yaml),
    meshctl: (args) => meshctl(["-c", api.kubeconfig, ...args], { env: { KUBECONFIG: "" } }),
    stop: () => api.stop(),
  };
}
