import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { admissionResponse, parseAdmissionReview } from "./admission.ts";
import { admissionReview, POD_KIND } from "./test_support.ts";

Deno.test("parseAdmissionReview: reads uid, kind, operation, namespace and object", () => {
  const r = parseAdmissionReview(
    admissionReview({ kind: "Pod" }, POD_KIND, { uid: "u-1", namespace: "bar" }),
  );
  assert.deepEqual([r.uid, r.kind.kind, r.operation, r.namespace, r.object], ["u-1", "Pod", "CREATE", "bar", {
    kind: "Pod",
  }]);
});

const BAD: [unknown, RegExp][] = [
  [[], /^the body must be a JSON object/],
  [
    { apiVersion: "admission.k8s.io/v1beta1", kind: "AdmissionReview", request: {} },
    /^apiVersion\/kind: expected admission\.k8s\.io\/v1 AdmissionReview, got admission\.k8s\.io\/v1beta1/,
  ],
  [{ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" }, /^request: required/],
  [
    { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: { uid: "u" } },
    /^request\.kind: required/,
  ],
  [
    { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: { kind: { kind: "Pod" } } },
    /^request\.uid: must be a string/,
  ],
  [{
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: { uid: "u", kind: { kind: "Pod" }, object: 3 },
  }, /^request\.object: must be an object/],
];
for (const [body, want] of BAD) {
  Deno.test(`parseAdmissionReview refuses ${JSON.stringify(body).slice(0, 60)}`, () => {
    assert.throws(
      () => parseAdmissionReview(body),
      (e: Error) => e.name === "AdmissionReviewError" && want.test(e.message),
    );
  });
}

Deno.test("admissionResponse: the patch is base64 JSON with patchType JSONPatch; a refusal carries status", () => {
  const patch = [{ op: "add" as const, path: "/metadata/labels/a", value: "é" }];
  const ok = admissionResponse("u", { allowed: true, patch });
  const response = ok.response as Record<string, unknown>;
  assert.equal(response.patchType, "JSONPatch");
  assert.deepEqual(JSON.parse(Buffer.from(response.patch as string, "base64").toString("utf8")), patch);
  assert.deepEqual(admissionResponse("u", { allowed: false, message: "no" }), {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid: "u", allowed: false, status: { code: 400, message: "no" } },
  });
});
