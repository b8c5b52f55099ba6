/**
 * Admission (placeholder until the webhook caller lands in this branch): every request is admitted
 * unchanged. See README "Limits".
 *
 * @module
 */
import type { AdmissionAttributes, ObjectApi } from "./objects.ts";
import type { KubeObject } from "./types.ts";

/** Admits every request unchanged (no webhooks are called yet). */
export function admissionChain(_objects: ObjectApi, attrs: AdmissionAttributes): Promise<KubeObject | null> {
  return Promise.resolve(attrs.object);
}
