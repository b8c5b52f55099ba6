/**
 * Chooses the patch algorithm from the request's Content-Type, as kube-apiserver does, and refuses
 * what this server does not implement (server-side apply, `application/apply-patch+yaml`) with 415.
 *
 * @module
 */
import { jsonPatch, mergePatch, strategicMerge } from "./patch.ts";
import type { ResourceType } from "./resource_types.ts";
import { BUILTIN_TYPES } from "./resource_types.ts";
import { ApiError, isObject, type KubeObject } from "./types.ts";

/**
 * The object after `patch` (already parsed) is applied to `current`.
 *
 * @throws ApiError UnsupportedMediaType for server-side apply, an unknown type, or strategic merge on a custom resource
 */
export function applyPatch(
  t: ResourceType,
  current: KubeObject,
  contentType: string,
  patch: unknown,
): KubeObject {
  const mediaType = contentType.split(";")[0].trim();
  let out: unknown;
  switch (mediaType) {
    case "application/merge-patch+json":
      out = mergePatch(current, patch);
      break;
    case "application/json-patch+json":
      out = jsonPatch(current, patch);
      break;
    case "application/strategic-merge-patch+json":
      if (!BUILTIN_TYPES.includes(t)) {
        throw new ApiError(
          "UnsupportedMediaType",
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json`,
        );
      }
      out = strategicMerge(current, patch);
      break;
    default:
      throw new ApiError(
        "UnsupportedMediaType",
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (server-side apply, ${mediaType}, is not implemented by this test server)`,
      );
  }
  if (!isObject(out)) throw new ApiError("BadRequest", "the patched object is not a JSON object");
  return out;
}
