/**
 * One admission request, from the body's text to the AdmissionReview response: what the webhook
 * Worker (worker.ts) runs for `/inject` and `/validate`. Pure apart from the clock: the template,
 * settings and namespace labels come in with the request, so the Worker needs no permission.
 *
 * @module
 */
import {
  type AdmissionRequest,
  admissionResponse,
  AdmissionReviewError,
  isObject,
  type JsonObject,
  parseAdmissionReview,
} from "./admission.ts";
import { injectionDecision } from "../../shared/internal/kube/injection_policy.ts";
import { injectionPatch, type InjectionSettings } from "./inject_patch.ts";
import type { InjectionTemplate } from "./template.ts";
import { validateAdmission } from "./validation.ts";

/** What `/inject` needs besides the body. */
export interface InjectContext {
  /** INJECT_ENABLED. */
  enabled: boolean;
  template: InjectionTemplate;
  settings: InjectionSettings;
  /** Labels of namespaces meshd knows (none without a Kubernetes registry). */
  namespaceLabels?: Record<string, Record<string, string>>;
}

/** How one request ended, for the metrics and the log. */
export type HandlerOutcome =
  | { webhook: "inject"; outcome: "injected" | "skipped" | "failed"; reason: string; seconds: number }
  | { webhook: "validate"; outcome: "passed" | "failed" | "ignored"; kind: string; reason: string };

/** The reply: a response body for HTTP 200, or an error for HTTP 400 (the body was no AdmissionReview). */
export type HandlerReply =
  | { review: JsonObject; outcome: HandlerOutcome }
  | { badRequest: string; webhook: "inject" | "validate" };

function parse(
  text: string,
  webhook: "inject" | "validate",
): { request: AdmissionRequest } | { badRequest: string; webhook: "inject" | "validate" } {
  try {
    return { request: parseAdmissionReview(JSON.parse(text)) };
  } catch (e) {
    if (e instanceof SyntaxError) return { badRequest: `the body is not JSON: ${e.message}`, webhook };
    if (e instanceof AdmissionReviewError) return { badRequest: e.message, webhook };
    throw e;
  }
}

/** `/inject`: decides, then patches (Istio's `inject` handler in pkg/kube/inject/webhook.go). */
export function handleInject(text: string, ctx: InjectContext): HandlerReply {
  const started = performance.now();
  const parsed = parse(text, "inject");
  if ("badRequest" in parsed) return parsed;
  const { request } = parsed;
  const done = (
    outcome: "injected" | "skipped" | "failed",
    reason: string,
    review: JsonObject,
  ): HandlerReply => ({
    review,
    outcome: { webhook: "inject", outcome, reason, seconds: (performance.now() - started) / 1000 },
  });
  const allow = (reason: string) =>
    done("skipped", reason, admissionResponse(request.uid, { allowed: true }));
  if (!ctx.enabled) return allow("INJECT_ENABLED is false");
  if (request.kind.kind !== "Pod" || request.kind.group !== "") {
    return allow(`${request.kind.kind} is not a Pod`);
  }
  if (request.operation !== "CREATE") {
    return allow(`operation ${request.operation} (only CREATE is injected)`);
  }
  const pod = request.object;
  if (!pod) return allow("the request carries no object");
  const metadata = isObject(pod.metadata) ? pod.metadata : {};
  const namespace = typeof metadata.namespace === "string" && metadata.namespace !== ""
    ? metadata.namespace
    : request.namespace;
  try {
    const decision = injectionDecision(pod, {
      namespace,
      namespaceLabels: ctx.namespaceLabels?.[namespace],
      revision: ctx.settings.revision,
      policy: ctx.template.policy,
    });
    if (!decision.inject) return allow(decision.reason);
    const patch = injectionPatch(pod, ctx.template, ctx.settings);
    return done("injected", decision.reason, admissionResponse(request.uid, { allowed: true, patch }));
  } catch (e) {
    const message = `injection failed: ${(e as Error).message}`;
    return done("failed", message, admissionResponse(request.uid, { allowed: false, code: 400, message }));
  }
}

/** `/validate`. */
export function handleValidate(text: string, rootNamespace: string): HandlerReply {
  const parsed = parse(text, "validate");
  if ("badRequest" in parsed) return parsed;
  const { request } = parsed;
  const v = validateAdmission(request, rootNamespace);
  return {
    review: admissionResponse(request.uid, v.decision),
    outcome: { webhook: "validate", outcome: v.result, kind: v.kind, reason: v.decision.message ?? "" },
  };
}
