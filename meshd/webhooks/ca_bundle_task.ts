/**
 * The caBundle patcher (ca_bundle_patcher.ts) as a task of the elected leader
 * (meshd/leader_election/controllers.ts): it patches the webhook configurations named by
 * INJECTION_WEBHOOK_CONFIG_NAME and VALIDATION_WEBHOOK_CONFIG_NAME with the CA's trust bundle through
 * meshd's one API client, counting `webhook_patch_{attempts,retries,failures}_total`. Each
 * configuration is watched (a field-selector watch on its name, as Istio's patcher watches its
 * webhook configuration), so a caBundle someone edited away is put back within moments rather than at
 * the patcher's 60 s recheck.
 *
 * @module
 */
import type { ApiClient } from "../kube_source/api_client.ts";
import type { CertificateAuthority } from "../ca/mod.ts";
import type { Logger } from "../logging/mod.ts";
import type { MeshdMetrics } from "../monitoring/metrics.ts";
import type { MeshdEnvironment } from "../options/environment.ts";
import type { LeaderTask } from "../leader_election/controllers.ts";
import { startCaBundlePatcher } from "./ca_bundle_patcher.ts";
import { webhookConfigApi } from "./ca_bundle_api.ts";

/**
 * The task, or undefined (logged) when there is nothing to patch: no CA (ENABLE_CA_SERVER=false), or
 * both names empty.
 */
export function caBundleTask(
  api: Pick<ApiClient, "json" | "request">,
  deps: {
    ca: CertificateAuthority | undefined;
    env: MeshdEnvironment;
    metrics: MeshdMetrics;
    logger: Logger;
  },
): LeaderTask | undefined {
  const log = deps.logger.scope("controllers");
  const { ca, env, metrics } = deps;
  const injectionName = env.INJECTION_WEBHOOK_CONFIG_NAME,
    validationName = env.VALIDATION_WEBHOOK_CONFIG_NAME;
  if (!ca) {
    log.info("no CA (ENABLE_CA_SERVER=false): the webhook configurations' caBundle is not patched");
    return undefined;
  }
  if (!injectionName && !validationName) return undefined;
  return {
    name: "webhook caBundle patcher",
    start: () => {
      // Aborted when leadership is lost: no write of this replica may follow.
      const abort = new AbortController();
      const patcher = startCaBundlePatcher({
        api: webhookConfigApi(api, abort.signal),
        injectionName,
        validationName,
        trustBundlePem: () => ca.trustBundlePem,
        onBundleChange: (listener) => ca.onBundleChange(listener),
        counters: {
          attempts: () => metrics.webhookPatchAttemptsTotal.inc(),
          retries: () => metrics.webhookPatchRetriesTotal.inc(),
          failures: () => metrics.webhookPatchFailuresTotal.inc(),
        },
        log,
      });
      const watches = [
        { collection: "mutatingwebhookconfigurations", name: injectionName },
        { collection: "validatingwebhookconfigurations", name: validationName },
      ].filter((w) => w.name !== "").map((w) =>
        watchConfig(api, w, () => void patcher.run(), abort.signal, (m) => log.warn(m))
      );
      return () => {
        patcher.stop();
        abort.abort();
        void Promise.all(watches);
      };
    },
  };
}

/** How long a failed or ended watch waits before it starts again, ms. */
const REWATCH_MS = 1000;

/**
 * Watches one webhook configuration and calls `onEvent` for every event (the first ones are the
 * object as it is now), until `signal` aborts; a watch that ends or fails starts again after
 * {@link REWATCH_MS}.
 */
async function watchConfig(
  api: Pick<ApiClient, "request">,
  w: { collection: string; name: string },
  onEvent: () => void,
  signal: AbortSignal,
  warn: (m: string) => void,
): Promise<void> {
  const path = `/apis/admissionregistration.k8s.io/v1/${w.collection}`;
  // Logged when it changes: a watch refused for good (403: RBAC) would otherwise fail silently every second.
  let lastFailure = "";
  const failed = (why: string) => {
    if (why !== lastFailure) {
      warn(`watch of ${w.collection} ${w.name} failed: ${why}; retrying every ${REWATCH_MS} ms`);
    }
    lastFailure = why;
  };
  while (!signal.aborted) {
    try {
      const response = await api.request("GET", path, {
        query: { watch: "1", fieldSelector: `metadata.name=${w.name}` },
        signal,
      });
      if (!response.ok) {
        await response.body?.cancel();
        failed(`HTTP ${response.status}`);
      } else {
        lastFailure = "";
        for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) {
          if (chunk.includes("\n")) onEvent();
        }
      }
    } catch (e) {
      // A cut connection or the stop: started again below unless stopped.
      if (!signal.aborted) failed((e as Error).message);
    }
    if (signal.aborted) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, REWATCH_MS);
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      }
      signal.addEventListener("abort", done, { once: true });
    });
  }
}
