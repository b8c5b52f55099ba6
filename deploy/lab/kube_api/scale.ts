/**
 * The `scale` subresource of Deployments, ReplicaSets and StatefulSets (autoscaling/v1 Scale), which
 * `kubectl scale` reads and patches: `spec.replicas` of the object, `status.replicas` and the label
 * selector from its status and spec. Nothing acts on the new replica count (no controllers).
 *
 * @module
 */
import type { ResourceType } from "./resource_types.ts";
import { ApiError, clone, isObject, type KubeObject, meta, str } from "./types.ts";

function selectorString(spec: KubeObject): string {
  const sel = isObject(spec.selector) ? spec.selector : {};
  const labels = isObject(sel.matchLabels) ? sel.matchLabels : {};
  return Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(",");
}

/** The Scale view of `obj`. */
export function toScale(obj: KubeObject): KubeObject {
  const m = meta(obj);
  const spec = isObject(obj.spec) ? obj.spec : {};
  const status = isObject(obj.status) ? obj.status : {};
  return {
    kind: "Scale",
    apiVersion: "autoscaling/v1",
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    spec: { replicas: typeof spec.replicas === "number" ? spec.replicas : 1 },
    status: {
      replicas: typeof status.replicas === "number" ? status.replicas : 0,
      selector: selectorString(spec),
    },
  };
}

/**
 * `obj` with `spec.replicas` from `scale` (and its resourceVersion precondition).
 *
 * @throws ApiError Invalid when spec.replicas is not a non-negative integer
 */
export function fromScale(t: ResourceType, obj: KubeObject, scale: KubeObject): KubeObject {
  const spec = isObject(scale.spec) ? scale.spec : {};
  const replicas = spec.replicas;
  if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0) {
    throw new ApiError(
      "Invalid",
      `Scale.autoscaling "${str(meta(obj), "name")}" is invalid: spec.replicas: Invalid value: ${
        JSON.stringify(replicas)
      }: must be greater than or equal to 0`,
      { kind: t.kind },
    );
  }
  const out = clone(obj);
  out.spec = { ...(isObject(out.spec) ? out.spec : {}), replicas };
  const rv = str(meta(scale), "resourceVersion");
  if (rv) meta(out).resourceVersion = rv;
  return out;
}
