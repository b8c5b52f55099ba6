/**
 * Runs the caBundle patch (ca_bundle.ts) for meshd: once at start, again after every change of the
 * CA's trust bundle (a root rotation), and every {@link RECHECK_MS} while a configuration is missing
 * or a write failed; {@link CaBundlePatcher.run} also runs it on demand (ca_bundle_task.ts calls it on
 * every watch event of the configurations, as Istio's patcher re-runs when someone edits them). Each write is counted as
 * `webhook_patch_attempts_total` (`_retries_total` after a conflict), each failure as
 * `webhook_patch_failures_total`, all logged with the configuration's name.
 *
 * @module
 */
import { patchCaBundle, type WebhookConfigApi, type WebhookConfigRef } from "./ca_bundle.ts";

/** How often the configurations are checked again, ms. */
export const RECHECK_MS = 60_000;

/** The counters it feeds (webhook_patch_*). */
export interface PatchCounters {
  attempts(): void;
  retries(): void;
  failures(): void;
}

/** Options of {@link startCaBundlePatcher}. */
export interface CaBundlePatcherOptions {
  api: WebhookConfigApi;
  /** INJECTION_WEBHOOK_CONFIG_NAME and VALIDATION_WEBHOOK_CONFIG_NAME; an empty name is left out. */
  injectionName: string;
  validationName: string;
  /** The trust bundle now (the CA's). */
  trustBundlePem: () => string;
  /** Subscribes to trust bundle changes (`ca.onBundleChange`); returns the unsubscribe function. */
  onBundleChange: (listener: () => void) => () => void;
  counters: PatchCounters;
  log: { info(m: string): void; warn(m: string): void };
  recheckMs?: number;
}

/** A running patcher. */
export interface CaBundlePatcher {
  /** Patches now; resolves when both configurations were handled. */
  run(): Promise<void>;
  stop(): void;
}

/** Starts the patcher; its first run starts at once. */
export function startCaBundlePatcher(o: CaBundlePatcherOptions): CaBundlePatcher {
  const refs: WebhookConfigRef[] = [
    { kind: "mutating" as const, name: o.injectionName },
    { kind: "validating" as const, name: o.validationName },
  ].filter((r) => r.name !== "");
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let running: Promise<void> | undefined;
  const once = async (): Promise<void> => {
    for (const ref of refs) {
      if (stopped) return;
      try {
        const result = await patchCaBundle(o.api, ref, o.trustBundlePem(), (retry) => {
          o.counters.attempts();
          if (retry) o.counters.retries();
        });
        if (result === "patched") {
          o.log.info(`${ref.kind} webhook configuration ${ref.name}: caBundle set to the mesh root`);
        }
        if (result === "missing") {
          o.log.warn(`${ref.kind} webhook configuration ${ref.name} does not exist (yet)`);
        }
      } catch (e) {
        // Stopped meanwhile (leadership lost): the aborted request is no failure.
        if (stopped) return;
        o.counters.failures();
        o.log.warn(
          `caBundle patch failed: ${(e as Error).message}; tried again within ${
            (o.recheckMs ?? RECHECK_MS) / 1000
          } s`,
        );
      }
    }
  };
  const run = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    running ??= once().finally(() => {
      running = undefined;
      clearTimeout(timer);
      if (!stopped) timer = setTimeout(() => void run(), o.recheckMs ?? RECHECK_MS);
    });
    return running;
  };
  const unsubscribe = o.onBundleChange(() => void run());
  void run();
  return {
    run,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
      unsubscribe();
    },
  };
}
