/**
 * The webhooks' metrics (meshd seed, "Exported metrics": `sidecar_injection_*`, `cfgvalidator_*`),
 * registered in meshd's one registry beside its other metrics (monitoring/metrics.ts) so that
 * `/metrics` on --monitoringAddr serves them.
 *
 * Not registered, because nothing does their work yet: `cfgvalidator_validation_config_load_error`,
 * `_config_updates` and `_config_update_error`. `webhook_patch_*` (the caBundle patcher) are in
 * monitoring/metrics.ts, fed by ca_bundle_task.ts.
 *
 * @module
 */
import client from "prom-client";
import type { HandlerOutcome } from "./handler.ts";

const SECONDS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 3, 5, 10];

/** The webhooks' counters and histogram. */
export interface WebhookMetrics {
  injectionRequests: client.Counter;
  injectionSuccess: client.Counter;
  injectionFailure: client.Counter;
  injectionSkip: client.Counter;
  injectionTime: client.Histogram;
  validationPassed: client.Counter<"kind">;
  validationFailed: client.Counter<"kind">;
  validationHttpError: client.Counter<"status">;
}

/** Creates the metrics in `registry` (meshd's: `createMetrics().registry`). */
export function createWebhookMetrics(registry: client.Registry): WebhookMetrics {
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
    new client.Counter<L>({ name, help, labelNames, registers });
  return {
    injectionRequests: counter("sidecar_injection_requests_total", "Injection requests"),
    injectionSuccess: counter("sidecar_injection_success_total", "Successful injection requests"),
    injectionFailure: counter("sidecar_injection_failure_total", "Failed injection requests"),
    injectionSkip: counter("sidecar_injection_skip_total", "Skipped injection requests"),
    injectionTime: new client.Histogram({
      name: "sidecar_injection_time_seconds",
      help: "Injection time",
      buckets: SECONDS,
      registers,
    }),
    validationPassed: counter("cfgvalidator_validation_passed", "Valid resources", ["kind"]),
    validationFailed: counter("cfgvalidator_validation_failed", "Resource validation failures", ["kind"]),
    validationHttpError: counter("cfgvalidator_validation_http_error", "Validation HTTP serve errors", [
      "status",
    ]),
  };
}

/**
 * Counts one answered request. Every `/inject` request counts in `_requests_total` (refused bodies
 * too, as Istio counts them) and then in exactly one of success, skip or failure.
 */
export function recordOutcome(m: WebhookMetrics, outcome: HandlerOutcome): void {
  if (outcome.webhook === "inject") {
    m.injectionRequests.inc();
    if (outcome.outcome === "injected") {
      m.injectionSuccess.inc();
      m.injectionTime.observe(outcome.seconds);
    } else if (outcome.outcome === "skipped") m.injectionSkip.inc();
    else m.injectionFailure.inc();
  } else if (outcome.outcome === "passed") m.validationPassed.inc({ kind: outcome.kind });
  else if (outcome.outcome === "failed") m.validationFailed.inc({ kind: outcome.kind });
}

/** Counts a request refused before the handler (bad method, type, size or body), by its HTTP status. */
export function recordHttpError(m: WebhookMetrics, webhook: "inject" | "validate", status: number): void {
  if (webhook === "inject") {
    m.injectionRequests.inc();
    m.injectionFailure.inc();
  } else m.validationHttpError.inc({ status: String(status) });
}
