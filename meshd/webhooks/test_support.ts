/**
 * Test helpers of the webhooks: an RFC 6902 applier (no JSON-patch library is in the lock), Istio's
 * httpbin sample pod as the API server sends it to a webhook, and AdmissionReview bodies.
 *
 * @module
 */
import type { JsonObject, JsonPatchOperation } from "./admission.ts";

/**
 * Applies `ops` to a copy of `doc` as the API server does (RFC 6902 add/replace/remove; `-` appends).
 *
 * @throws Error when a path does not exist, as the API server refuses such a patch
 */
export function applyJsonPatch(doc: JsonObject, ops: JsonPatchOperation[]): JsonObject {
  const out: JsonObject = structuredClone(doc);
  for (const op of ops) {
    const segments = op.path.split("/").slice(1).map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
    const last = segments.pop();
    if (last === undefined) throw new Error(`${op.path}: the root cannot be patched here`);
    let parent: unknown = out;
    for (const s of segments) {
      parent = Array.isArray(parent) ? parent[Number(s)] : (parent as JsonObject | undefined)?.[s];
      if (typeof parent !== "object" || parent === null) throw new Error(`${op.path}: ${s} does not exist`);
    }
    if (Array.isArray(parent)) {
      const i = last === "-" ? parent.length : Number(last);
      if (op.op === "add") parent.splice(i, 0, structuredClone(op.value));
      else if (op.op === "replace") parent[i] = structuredClone(op.value);
      else parent.splice(i, 1);
    } else {
      const o = parent as JsonObject;
      if (op.op !== "add" && !(last in o)) throw new Error(`${op.path}: does not exist`);
      if (op.op === "remove") delete o[last];
      else o[last] = structuredClone(op.value);
    }
  }
  return out;
}

/**
 * The pod of Istio's samples/httpbin/httpbin.yaml Deployment (istio/istio 1aa8c77) as the API
 * server sends it to a mutating webhook: generateName from the ReplicaSet, the ServiceAccount
 * admission plugin's token volume already added.
 */
export function httpbinPod(): JsonObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      generateName: "httpbin-6f4d8f7b9c-",
      namespace: "foo",
      labels: { app: "httpbin", version: "v1", "pod-template-hash": "6f4d8f7b9c" },
      ownerReferences: [{
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        name: "httpbin-6f4d8f7b9c",
        uid: "r-1",
      }],
    },
    spec: {
      serviceAccountName: "httpbin",
      containers: [{
        image: "docker.io/kennethreitz/httpbin",
        imagePullPolicy: "IfNotPresent",
        name: "httpbin",
        ports: [{ containerPort: 80, protocol: "TCP" }],
        volumeMounts: [{
          name: "kube-api-access-abcde",
          mountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
          readOnly: true,
        }],
      }],
      volumes: [{
        name: "kube-api-access-abcde",
        projected: { sources: [{ serviceAccountToken: { path: "token" } }] },
      }],
    },
  };
}

/** An AdmissionReview v1 request body for `object`. */
export function admissionReview(
  object: JsonObject | undefined,
  kind: { group: string; version: string; kind: string },
  extra: { uid?: string; operation?: string; namespace?: string; name?: string } = {},
): JsonObject {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: extra.uid ?? "705ab4f5-6393-11e8-b7cc-42010a800002",
      kind,
      resource: { group: kind.group, version: kind.version, resource: `${kind.kind.toLowerCase()}s` },
      operation: extra.operation ?? "CREATE",
      namespace: extra.namespace ?? "foo",
      name: extra.name ?? "",
      object,
      userInfo: { username: "system:serviceaccount:kube-system:replicaset-controller" },
      dryRun: false,
    },
  };
}

/** The Pod kind of AdmissionRequest. */
export const POD_KIND = { group: "", version: "v1", kind: "Pod" };

/** An AuthorizationPolicy whose action is not one of ALLOW, DENY, AUDIT, CUSTOM. */
export const INVALID_POLICY: JsonObject = {
  apiVersion: "security.istio.io/v1",
  kind: "AuthorizationPolicy",
  metadata: { name: "deny-all", namespace: "foo" },
  spec: { action: "BLOCK", rules: [{}] },
};
