/**
 * Keeps the mesh root in the `caBundle` of the webhook configurations (Istio's webhook patcher,
 * pkg/webhooks/webhookpatch.go, and the validation controller): every webhook of the
 * MutatingWebhookConfiguration INJECTION_WEBHOOK_CONFIG_NAME and of the
 * ValidatingWebhookConfiguration VALIDATION_WEBHOOK_CONFIG_NAME gets `clientConfig.caBundle` set to
 * the base64 of the trust bundle, at start and after every root rotation, so that the API server
 * trusts the certificate meshd serves on --httpsAddr. An empty name turns that one off. A
 * configuration that does not exist is logged and tried again later (the operator may create it
 * after meshd); a write that lost a race (409) is read and written again.
 *
 * meshd's elected leader runs it (ca_bundle_task.ts) over its one API client (ca_bundle_api.ts implements
 * {@link WebhookConfigApi}). Tested against the test API server
 * (tests/integration/meshd/webhook_ca_bundle_test.ts, kube_leader_cli_test.ts).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { isObject, type JsonObject } from "./admission.ts";

/** The two requests the patcher makes, against the API server's admissionregistration.k8s.io/v1. */
export interface WebhookConfigApi {
  /** GETs `path`; undefined on 404. */
  get(path: string): Promise<JsonObject | undefined>;
  /** PUTs `body` to `path`; resolves to the HTTP status (200 stored, 409 conflict, other: failure). */
  put(path: string, body: JsonObject): Promise<number>;
}

/** Which configuration: its kind's collection and name. */
export interface WebhookConfigRef {
  kind: "mutating" | "validating";
  name: string;
}

/** What one patch did. */
export type PatchResult = "patched" | "unchanged" | "missing";

/** The API path of a configuration. */
export function configPath(ref: WebhookConfigRef): string {
  const collection = ref.kind === "mutating"
    ? "mutatingwebhookconfigurations"
    : "validatingwebhookconfigurations";
  return `/apis/admissionregistration.k8s.io/v1/${collection}/${encodeURIComponent(ref.name)}`;
}

/**
 * `config` with every webhook's `clientConfig.caBundle` set to `caBundle` (base64 PEM). Pure.
 *
 * @returns the new object, or undefined when every webhook already has it
 * @throws Error naming the field when `webhooks` is not a list of objects with a clientConfig
 */
export function withCaBundle(config: JsonObject, caBundle: string): JsonObject | undefined {
  const next = structuredClone(config);
  const webhooks = next.webhooks ?? [];
  if (!Array.isArray(webhooks)) throw new Error("webhooks: must be a list");
  let changed = false;
  webhooks.forEach((w, i) => {
    if (!isObject(w) || !isObject(w.clientConfig)) throw new Error(`webhooks[${i}].clientConfig: required`);
    if (w.clientConfig.caBundle !== caBundle) {
      w.clientConfig.caBundle = caBundle;
      changed = true;
    }
  });
  return changed ? next : undefined;
}

/** How many times a conflicting write is read and tried again. */
export const CONFLICT_RETRIES = 5;

/**
 * Sets the caBundle of every webhook of one configuration to `trustBundlePem`.
 *
 * @param onAttempt called before every write (webhook_patch_attempts_total); `retry` is true after a conflict
 * @throws Error `<kind> webhook configuration <name>: <reason>` when the write fails or conflicts too often
 */
export async function patchCaBundle(
  api: WebhookConfigApi,
  ref: WebhookConfigRef,
  trustBundlePem: string,
  onAttempt: (retry: boolean) => void = () => {},
): Promise<PatchResult> {
  const caBundle = Buffer.from(trustBundlePem).toString("base64");
  const what = `${ref.kind} webhook configuration ${ref.name}`;
  for (let attempt = 0; attempt <= CONFLICT_RETRIES; attempt++) {
    const current = await api.get(configPath(ref));
    if (!current) return "missing";
    let next: JsonObject | undefined;
    try {
      next = withCaBundle(current, caBundle);
    } catch (e) {
      throw new Error(`${what}: ${(e as Error).message}`);
    }
    if (!next) return "unchanged";
    onAttempt(attempt > 0);
    const status = await api.put(configPath(ref), next);
    if (status === 200) return "patched";
    if (status !== 409) throw new Error(`${what}: the API server answered ${status} to the update`);
  }
  throw new Error(`${what}: still conflicting after ${CONFLICT_RETRIES} retries`);
}
