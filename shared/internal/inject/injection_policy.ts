/**
 * Whether a pod gets a sidecar: Istio's rules (istio.io "Sidecar injection", "Controlling the
 * injection policy"; `injectRequired` in istio/istio pkg/kube/inject/webhook.go), with the mesh's
 * own names beside Istio's. Pure: the namespace's labels are passed in. Shared by meshd's injection
 * webhook and `meshctl x check-inject`.
 *
 * In order, the first rule that decides wins:
 * 1. `spec.hostNetwork: true`: skipped (redirection would capture the node's traffic).
 * 2. Already injected (annotation `sidecar.mesh.io/status` or `sidecar.istio.io/status`): skipped.
 * 3. Namespaces kube-system and kube-public: skipped.
 * 4. Namespace label `mesh-injection` / `istio-injection` = `disabled`: skipped, whatever the pod says.
 * 5. Pod label `sidecar.mesh.io/inject` / `sidecar.istio.io/inject` (else the annotation of that
 *    name, deprecated in Istio): `true` injects, `false` skips; another value is an error.
 * 6. Namespace label `mesh-injection` / `istio-injection` = `enabled`: injected.
 * 7. Revision label `mesh.io/rev` / `istio.io/rev` on the pod, else the namespace: injected when it
 *    names this meshd's revision, skipped otherwise.
 * 8. A namespace whose labels are known and ask for nothing: skipped.
 * 9. Otherwise (namespace labels unknown) the template's `config.policy`: `enabled` (Istio's
 *    default) injects, `disabled` skips. istiod knows no namespace labels either: the webhook
 *    configuration's namespaceSelector only sends it pods of namespaces that asked.
 *
 * @module
 */
import type { JsonObject } from "./json.ts";
import { isObject } from "./json.ts";

/** The mesh's label or annotation first, then Istio's. */
export const INJECT_KEYS = ["sidecar.mesh.io/inject", "sidecar.istio.io/inject"] as const;
/** Namespace injection labels. */
export const NAMESPACE_INJECTION_LABELS = ["mesh-injection", "istio-injection"] as const;
/** Revision labels. */
export const REVISION_LABELS = ["mesh.io/rev", "istio.io/rev"] as const;
/** Annotations that mark a pod as injected. */
export const STATUS_ANNOTATIONS = ["sidecar.mesh.io/status", "sidecar.istio.io/status"] as const;
/** Namespaces never injected (Istio's ignoredNamespaces). */
export const IGNORED_NAMESPACES = ["kube-system", "kube-public"] as const;

/** What decides for pods that say nothing: the template's `config.policy`. */
export type InjectionPolicy = "enabled" | "disabled";

/** The decision and the rule that made it (logged, and the skip's reason). */
export interface InjectionDecision {
  inject: boolean;
  reason: string;
}

/** The inputs besides the pod. */
export interface InjectionContext {
  /** The pod's namespace (the request's, when the pod names none). */
  namespace: string;
  /** The namespace's labels; undefined when meshd does not know them. */
  namespaceLabels: Record<string, string> | undefined;
  /** This meshd's revision (`--revision`; "default" when unset). */
  revision: string;
  policy: InjectionPolicy;
}

/** A string map at `o[field]` (labels, annotations), empty when absent. */
export function stringMap(o: JsonObject | undefined, field: string): Record<string, string> {
  const v = o?.[field];
  if (!isObject(v)) return {};
  return Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === "string"));
}

function first(map: Record<string, string>, keys: readonly string[]): [string, string] | undefined {
  for (const k of keys) if (map[k] !== undefined) return [k, map[k]];
  return undefined;
}

/**
 * Decides whether `pod` gets a sidecar (rules in the module comment).
 *
 * @throws Error naming the label or annotation when its value is neither true nor false
 */
export function injectionDecision(pod: JsonObject, ctx: InjectionContext): InjectionDecision {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const metadata = isObject(pod.metadata) ? pod.metadata : {};
  const labels = stringMap(metadata, "labels");
  const annotations = stringMap(metadata, "annotations");
  if (spec.hostNetwork === true) return { inject: false, reason: "the pod uses the host network" };
  const status = first(annotations, STATUS_ANNOTATIONS);
  if (status) return { inject: false, reason: `already injected (annotation ${status[0]})` };
  if ((IGNORED_NAMESPACES as readonly string[]).includes(ctx.namespace)) {
    return { inject: false, reason: `namespace ${ctx.namespace} is never injected` };
  }
  const nsLabel = ctx.namespaceLabels && first(ctx.namespaceLabels, NAMESPACE_INJECTION_LABELS);
  if (nsLabel?.[1] === "disabled") {
    return { inject: false, reason: `namespace label ${nsLabel[0]}=disabled` };
  }
  const podSays = first(labels, INJECT_KEYS) ?? first(annotations, INJECT_KEYS);
  if (podSays) {
    const [key, value] = podSays;
    const where = labels[key] !== undefined ? "label" : "annotation";
    if (value === "true") return { inject: true, reason: `pod ${where} ${key}=true` };
    if (value === "false") return { inject: false, reason: `pod ${where} ${key}=false` };
    throw new Error(`metadata.${where}s.${key}: ${JSON.stringify(value)} must be true or false`);
  }
  if (nsLabel?.[1] === "enabled") return { inject: true, reason: `namespace label ${nsLabel[0]}=enabled` };
  const rev = first(labels, REVISION_LABELS) ??
    (ctx.namespaceLabels && first(ctx.namespaceLabels, REVISION_LABELS));
  if (rev) {
    return rev[1] === ctx.revision
      ? { inject: true, reason: `revision label ${rev[0]}=${rev[1]}` }
      : { inject: false, reason: `revision label ${rev[0]}=${rev[1]} is not this meshd's (${ctx.revision})` };
  }
  if (ctx.namespaceLabels !== undefined) {
    return { inject: false, reason: `namespace ${ctx.namespace} has no injection or revision label` };
  }
  return ctx.policy === "enabled"
    ? { inject: true, reason: "the injection policy is enabled" }
    : { inject: false, reason: "nothing asks for injection and the injection policy is disabled" };
}
