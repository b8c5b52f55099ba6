/**
 * The shapes the test API server passes around: a Kubernetes object as parsed JSON, the errors that
 * become a `Status` answer (apimachinery's `metav1.Status`), and small readers of `metadata`.
 *
 * @module
 */

/** A Kubernetes object or any JSON object, as parsed from a request body. */
export type KubeObject = Record<string, unknown>;

/** True when `v` is a plain JSON object (not an array, not null). */
export function isObject(v: unknown): v is KubeObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The object's `metadata`, created empty when absent or not an object. */
export function meta(obj: KubeObject): KubeObject {
  if (!isObject(obj.metadata)) obj.metadata = {};
  return obj.metadata as KubeObject;
}

/** A string member of `obj`, or "" when absent or not a string. */
export function str(obj: KubeObject | undefined, key: string): string {
  const v = obj?.[key];
  return typeof v === "string" ? v : "";
}

/** The string map at `metadata[key]` (labels, annotations), empty when absent. */
export function stringMap(obj: KubeObject, key: "labels" | "annotations"): Record<string, string> {
  const m = meta(obj)[key];
  const out: Record<string, string> = {};
  if (isObject(m)) { for (const [k, v] of Object.entries(m)) if (typeof v === "string") out[k] = v; }
  return out;
}

/** A deep copy of a JSON value. */
export function clone<T>(v: T): T {
  return structuredClone(v);
}

/** The `reason` values of a failed `Status` this server answers with (apimachinery StatusReason). */
export type StatusReason =
  | "NotFound"
  | "AlreadyExists"
  | "Conflict"
  | "Invalid"
  | "BadRequest"
  | "MethodNotAllowed"
  | "Gone"
  | "Unauthorized"
  | "UnsupportedMediaType"
  | "NotAcceptable"
  | "InternalError"
  | "Expired";

const CODES: Record<StatusReason, number> = {
  NotFound: 404,
  AlreadyExists: 409,
  Conflict: 409,
  Invalid: 422,
  BadRequest: 400,
  MethodNotAllowed: 405,
  Gone: 410,
  Unauthorized: 401,
  UnsupportedMediaType: 415,
  NotAcceptable: 406,
  InternalError: 500,
  Expired: 410,
};

/** An error answered as a `Status` object with the HTTP code of its reason (or `code` when given). */
export class ApiError extends Error {
  readonly code: number;
  constructor(
    readonly reason: StatusReason,
    message: string,
    readonly details: KubeObject = {},
    code?: number,
  ) {
    super(message);
    this.code = code ?? CODES[reason];
  }

  /** The `Status` object (kind Status, apiVersion v1) for this error. */
  toStatus(): KubeObject {
    return statusObject(this.code, this.reason, this.message, this.details);
  }
}

/** A failed `Status` object. */
export function statusObject(
  code: number,
  reason: string,
  message: string,
  details: KubeObject = {},
): KubeObject {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    details,
    code,
  };
}

/** The `404 NotFound` of object `name` of `resource` (message as kube-apiserver words it). */
export function notFound(resource: string, group: string, name: string): ApiError {
  const qualified = group ? `${resource}.${group}` : resource;
  return new ApiError("NotFound", `${qualified} "${name}" not found`, { name, group, kind: resource });
}
