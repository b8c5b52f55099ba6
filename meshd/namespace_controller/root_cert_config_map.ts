/**
 * What the root certificate ConfigMap of one namespace should be, as istiod's NamespaceController
 * decides it (pilot/pkg/serviceregistry/kube/controller/namespacecontroller.go with
 * security/pkg/k8s/configutil.go InsertDataToConfigMap): the ConfigMap `mesh-ca-root-cert` (Istio's
 * `istio-ca-root-cert`), key `root-cert.pem`, holding the CA's trust bundle, in every namespace but
 * Kubernetes' own; created when missing, updated when its `root-cert.pem` differs (other keys, labels
 * and annotations someone added are kept, as Istio keeps them). The injected sidecar mounts it
 * (shared/internal/inject/inject_patch.ts `ROOT_CONFIG_MAP`).
 *
 * @module
 */
import { ROOT_CONFIG_MAP } from "../../shared/internal/inject/inject_patch.ts";

/** The ConfigMap's name (Istio: `istio-ca-root-cert`). */
export const ROOT_CERT_CONFIG_MAP = ROOT_CONFIG_MAP;
/** Its data key: the PEM roots, as the proxy's `--rootCertFile` reads them. */
export const ROOT_CERT_KEY = "root-cert.pem";
/** The label it carries (Istio's is `istio.io/config: "true"`). */
export const ROOT_CERT_LABELS: Readonly<Record<string, string>> = { "mesh.io/config": "true" };

/**
 * Namespaces that never get it: Istio's `inject.IgnoredNamespaces` (never injected either). Istio
 * since 1.20 publishes into kube-system too, for ztunnel; meshd has no ztunnel.
 */
export const IGNORED_NAMESPACES: ReadonlySet<string> = new Set([
  "kube-system",
  "kube-public",
  "kube-node-lease",
  "local-path-storage",
]);

/** A ConfigMap as read and written (only the fields used; the rest is sent back as read). */
export interface ConfigMap {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    [key: string]: unknown;
  };
  data?: Record<string, string>;
  [key: string]: unknown;
}

/** What one namespace needs. */
export type RootCertAction =
  | { kind: "none" }
  | { kind: "create"; body: ConfigMap }
  | { kind: "update"; body: ConfigMap };

/**
 * Whether a namespace gets the ConfigMap.
 *
 * @param watchNamespace MESH_WATCH_NAMESPACE: when not empty, that namespace only
 * @param phase the Namespace's `status.phase`: a `Terminating` one is left alone (a create would be refused)
 */
export function publishesTo(namespace: string, watchNamespace: string, phase?: string): boolean {
  if (watchNamespace !== "" && namespace !== watchNamespace) return false;
  return !IGNORED_NAMESPACES.has(namespace) && phase !== "Terminating";
}

/**
 * The write that makes `current` (the namespace's ConfigMap, undefined when there is none) hold
 * `rootsPem`: a create, an update carrying `current`'s resourceVersion (so that a concurrent change is
 * refused with 409 and read again, not overwritten), or none when it already holds it.
 */
export function rootCertAction(
  namespace: string,
  current: ConfigMap | undefined,
  rootsPem: string,
): RootCertAction {
  if (current === undefined) {
    return {
      kind: "create",
      body: {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: ROOT_CERT_CONFIG_MAP, namespace, labels: { ...ROOT_CERT_LABELS } },
        data: { [ROOT_CERT_KEY]: rootsPem },
      },
    };
  }
  if (current.data?.[ROOT_CERT_KEY] === rootsPem) return { kind: "none" };
  return {
    kind: "update",
    body: {
      ...current,
      apiVersion: "v1",
      kind: "ConfigMap",
      data: { ...current.data, [ROOT_CERT_KEY]: rootsPem },
    },
  };
}
