/**
 * AdmissionReview v1 (`admission.k8s.io/v1`), in and out: the request the API server posts to a
 * webhook and the response it expects back (Kubernetes "Dynamic Admission Control"). Pure: no I/O.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { isObject, type JsonObject, type JsonPatchOperation } from "../../shared/internal/inject/json.ts";

export {
  isObject,
  type JsonObject,
  type JsonPatchOperation,
  pointerSegment,
} from "../../shared/internal/inject/json.ts";

/** The parts of an AdmissionRequest the webhooks read. */
export interface AdmissionRequest {
  /** Echoed in the response; the API server matches them by it. */
  uid: string;
  /** `{group, version, kind}` of the object. */
  kind: { group: string; version: string; kind: string };
  /** CREATE, UPDATE, DELETE or CONNECT. */
  operation: string;
  /** May be empty for objects created with generateName. */
  name: string;
  namespace: string;
  /** The object as it will be stored (absent for DELETE). */
  object: JsonObject | undefined;
  /** True when the API server will not persist the result (`kubectl apply --dry-run=server`). */
  dryRun: boolean;
}

/** What a webhook decided about one request. */
export interface AdmissionDecision {
  allowed: boolean;
  /** RFC 6902 operations; sent base64-encoded with `patchType: JSONPatch`. */
  patch?: JsonPatchOperation[];
  /** Why a request was refused (the `kubectl apply` user sees it). */
  message?: string;
  /** HTTP-style code of a refusal; default 400 when `message` is given. */
  code?: number;
  /** Non-fatal notes the API server shows the user. */
  warnings?: string[];
}

/** A request body that is not an AdmissionReview v1 with a request; the message names the field. */
export class AdmissionReviewError extends Error {
  override name = "AdmissionReviewError";
}

/** A string field, or "" when absent. */
function text(o: JsonObject, field: string, path: string, required = false): string {
  const v = o[field];
  if (v === undefined && !required) return "";
  if (typeof v !== "string") throw new AdmissionReviewError(`${path}.${field}: must be a string`);
  return v;
}

/**
 * Reads an AdmissionReview v1 body.
 *
 * @throws {AdmissionReviewError} naming the field when the body is not one
 */
export function parseAdmissionReview(body: unknown): AdmissionRequest {
  if (!isObject(body)) throw new AdmissionReviewError("the body must be a JSON object (an AdmissionReview)");
  if (body.apiVersion !== "admission.k8s.io/v1" || body.kind !== "AdmissionReview") {
    throw new AdmissionReviewError(
      `apiVersion/kind: expected admission.k8s.io/v1 AdmissionReview, got ${String(body.apiVersion)} ${
        String(body.kind)
      } (only v1 is served, as Istio since 1.22)`,
    );
  }
  const r = body.request;
  if (!isObject(r)) throw new AdmissionReviewError("request: required, must be an object");
  const k = r.kind;
  if (!isObject(k)) throw new AdmissionReviewError("request.kind: required, must be an object");
  const object = r.object;
  if (object !== undefined && object !== null && !isObject(object)) {
    throw new AdmissionReviewError("request.object: must be an object");
  }
  return {
    uid: text(r, "uid", "request", true),
    kind: {
      group: text(k, "group", "request.kind"),
      version: text(k, "version", "request.kind"),
      kind: text(k, "kind", "request.kind", true),
    },
    operation: text(r, "operation", "request"),
    name: text(r, "name", "request"),
    namespace: text(r, "namespace", "request"),
    object: isObject(object) ? object : undefined,
    dryRun: r.dryRun === true,
  };
}

/**
 * The AdmissionReview v1 response for `uid`.
 *
 * @returns the JSON body to send (HTTP 200 in every case: a refusal is `allowed: false`)
 */
export function admissionResponse(uid: string, decision: AdmissionDecision): JsonObject {
  const response: JsonObject = { uid, allowed: decision.allowed };
  if (decision.patch && decision.patch.length > 0) {
    response.patchType = "JSONPatch";
    response.patch = Buffer.from(JSON.stringify(decision.patch)).toString("base64");
  }
  if (decision.message !== undefined) {
    response.status = { code: decision.code ?? 400, message: decision.message };
  }
  if (decision.warnings && decision.warnings.length > 0) response.warnings = decision.warnings;
  return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response };
}
