/**
 * What meshd reads from the Kubernetes API as config (issue 14, item 1), and how one object becomes a
 * document for shared's validator, the same `validateText` the file source and `meshctl validate` run.
 *
 * Watched: every kind of `shared`'s KINDS in the mesh's groups (`security.mesh.io/v1`,
 * `networking.mesh.io/v1`, the CRDs in deploy/crds/) and in Istio's (`security.istio.io/v1`,
 * `networking.istio.io/v1`, aliases sharing the resource's key, as in files), and `v1` Secrets that hold
 * a gateway credential (type `kubernetes.io/tls`, or `Opaque` with `tls.crt`/`tls.key`, `cert`/`key`,
 * `ca.crt` or `cacert`; istiod's credentials controller reads the same keys).
 *
 * @module
 */
import { ACCEPTED_API_VERSIONS, KINDS, validateText, type ValidationResult } from "../../shared/mod.ts";

/** One resource type watched through an informer. */
export interface WatchedResource {
  /** `group/version`, or `v1` for the core group. */
  readonly apiVersion: string;
  /** The kind, e.g. `PeerAuthentication`. */
  readonly kind: string;
  /** The URL plural, e.g. `peerauthentications`. */
  readonly plural: string;
}

/** The URL plural of each kind of the mesh (deploy/crds/ names each CRD `<plural>.<group>`). */
const PLURALS: Readonly<Record<string, string>> = {
  PeerAuthentication: "peerauthentications",
  RequestAuthentication: "requestauthentications",
  AuthorizationPolicy: "authorizationpolicies",
  ServiceEntry: "serviceentries",
  WorkloadEntry: "workloadentries",
  WorkloadGroup: "workloadgroups",
  Gateway: "gateways",
  VirtualService: "virtualservices",
};

/** The mesh's own version and Istio's `v1` of each group: the versions watched. */
const WATCHED_VERSIONS = {
  security: ACCEPTED_API_VERSIONS.security.filter((v) => v.endsWith("/v1")),
  networking: ACCEPTED_API_VERSIONS.networking.filter((v) => v.endsWith("/v1")),
};

/** Every resource type meshd watches as config, mesh groups first, Secrets last. */
export const WATCHED_RESOURCES: readonly WatchedResource[] = [
  ...KINDS.flatMap((k) =>
    WATCHED_VERSIONS[k.group].map((apiVersion) => ({ apiVersion, kind: k.kind, plural: PLURALS[k.kind] }))
  ),
  { apiVersion: "v1", kind: "Secret", plural: "secrets" },
];

/**
 * The collection path of a resource type, cluster-wide or in one namespace (MESH_WATCH_NAMESPACE).
 *
 * @returns e.g. `/apis/security.mesh.io/v1/namespaces/foo/peerauthentications`
 */
export function collectionPath(r: WatchedResource, namespace?: string): string {
  const base = r.apiVersion.includes("/") ? `/apis/${r.apiVersion}` : `/api/${r.apiVersion}`;
  return namespace ? `${base}/namespaces/${namespace}/${r.plural}` : `${base}/${r.plural}`;
}

/** The name of one object in logs and in the resource index: kubectl's `plural.group/name`, with its namespace. */
export function objectName(r: WatchedResource, namespace: string, name: string): string {
  const group = r.apiVersion.includes("/") ? `.${r.apiVersion.split("/")[0]}` : "";
  return `kubernetes:${r.plural}${group}/${namespace}/${name}`;
}

/** An object as an informer hands it over: only what is read here is typed. */
export interface KubeObject {
  metadata?: { name?: string; namespace?: string; labels?: unknown; annotations?: unknown };
  spec?: unknown;
  type?: unknown;
  data?: unknown;
}

const CREDENTIAL_KEYS = ["tls.crt", "tls.key", "cert", "key", "ca.crt", "cacert"];

/**
 * Whether a Secret is a gateway credential. Clusters hold many other Secrets (tokens, registry
 * credentials, Helm releases); those are not config and are neither validated nor counted.
 */
export function isCredentialSecret(obj: KubeObject): boolean {
  if (obj.type === "kubernetes.io/tls") return true;
  if (obj.type !== undefined && obj.type !== "Opaque") return false;
  const data = obj.data;
  return typeof data === "object" && data !== null && CREDENTIAL_KEYS.some((k) => k in data);
}

/**
 * The document shared's validator sees for an object: apiVersion and kind of the watched type (list
 * items carry neither), the metadata that places and selects it, and its spec (Secrets: type and
 * data). Server-set metadata and status are left out: they are not config.
 */
export function documentOf(r: WatchedResource, obj: KubeObject): Record<string, unknown> {
  const m = obj.metadata ?? {};
  const metadata: Record<string, unknown> = { name: m.name, namespace: m.namespace };
  if (m.labels !== undefined) metadata.labels = m.labels;
  if (m.annotations !== undefined) metadata.annotations = m.annotations;
  const doc: Record<string, unknown> = { apiVersion: r.apiVersion, kind: r.kind, metadata };
  if (r.kind === "Secret") {
    if (obj.type !== undefined) doc.type = obj.type;
    if (obj.data !== undefined) doc.data = obj.data;
  } else doc.spec = obj.spec;
  return doc;
}

/**
 * Validates one object with shared's `validateText`, as a file of one document named `name`. Issues
 * lose line and document number (a rendering's, not the user's); each still names the object, the
 * field path and the reason, and the resource index keeps the object's last good version on an error.
 */
export function validateObject(
  r: WatchedResource,
  obj: KubeObject,
  name: string,
  rootNamespace: string | undefined,
): ValidationResult {
  const result = validateText(JSON.stringify(documentOf(r, obj)), name, { rootNamespace });
  return {
    resources: result.resources,
    skipped: result.skipped,
    issues: result.issues.map(({ line: _line, documentIndex: _index, ...issue }) => issue),
  };
}
