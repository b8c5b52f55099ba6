/**
 * The caBundle patcher's two requests ({@link WebhookConfigApi}) over meshd's one rate-limited
 * Kubernetes API client (meshd/kube_source/api_client.ts, shared through meshd/kube_control.ts).
 *
 * @module
 */
import type { ApiClient } from "../kube_source/api_client.ts";
import type { JsonObject } from "./admission.ts";
import type { WebhookConfigApi } from "./ca_bundle.ts";

/** GET (undefined on 404) and PUT (the HTTP status) through `api`; `signal` aborts both (leadership lost). */
export function webhookConfigApi(
  api: Pick<ApiClient, "json" | "request">,
  signal?: AbortSignal,
): WebhookConfigApi {
  return {
    async get(path: string): Promise<JsonObject | undefined> {
      try {
        return await api.json<JsonObject>("GET", path, { signal });
      } catch (e) {
        if ((e as { statusCode?: number }).statusCode === 404) return undefined;
        throw e;
      }
    },
    async put(path: string, body: JsonObject): Promise<number> {
      const response = await api.request("PUT", path, { body, signal });
      await response.body?.cancel();
      return response.status;
    },
  };
}
