/**
 * Test helpers of the webhooks: AdmissionReview bodies; the RFC 6902 applier and Istio's httpbin sample
 * pod come from shared/internal/inject, whose tests use them too.
 *
 * @module
 */
import type { JsonObject } from "./admission.ts";

export { applyJsonPatch } from "../../shared/internal/inject/json.ts";
export { httpbinPod } from "../../shared/internal/inject/test_support.ts";

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
