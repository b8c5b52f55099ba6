/**
 * Dynamic admission as kube-apiserver runs it: on create, update and delete of any type but the
 * webhook configurations themselves (and TokenReview), every matching webhook of every
 * MutatingWebhookConfiguration (by configuration name, then list order) is called in turn and its
 * JSONPatch applied, then every matching ValidatingWebhookConfiguration webhook. A webhook matches by
 * `rules` (operations, apiGroups, apiVersions, resources incl. `*`, `*\/*`, `pods/status`; scope),
 * `namespaceSelector` (the labels of the object's Namespace) and `objectSelector` (labels of the new
 * or old object). `failurePolicy` Fail (the default) refuses the request when the call fails; Ignore
 * skips the webhook. Source: Kubernetes docs "Dynamic Admission Control" (v1.32). Not implemented:
 * `matchConditions`, `matchPolicy: Equivalent`, `reinvocationPolicy: IfNeeded`, dry-run.
 *
 * @module
 */
import { labelSelectorMatches } from "../../../shared/internal/kube/label_selector.ts";
import { jsonPatch } from "./patch.ts";
import type { AdmissionAttributes, ObjectApi } from "./objects.ts";
import { apiVersionOf } from "./resource_types.ts";
import { ApiError, isObject, type KubeObject, meta, str, stringMap } from "./types.ts";
import { callWebhook, resolveTarget } from "./webhook_client.ts";

const SKIPPED_GROUPS = new Set(["admissionregistration.k8s.io", "authentication.k8s.io"]);

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
}

function ruleMatches(rule: KubeObject, a: AdmissionAttributes): boolean {
  const has = (list: string[], v: string): boolean => list.includes("*") || list.includes(v);
  if (!has(strings(rule.operations), a.operation)) return false;
  if (!has(strings(rule.apiGroups), a.type.group)) return false;
  if (!has(strings(rule.apiVersions), a.type.version)) return false;
  const scope = str(rule, "scope") || "*";
  if (scope === "Namespaced" && !a.type.namespaced) return false;
  if (scope === "Cluster" && a.type.namespaced) return false;
  return strings(rule.resources).some((r) => {
    const [res, sub = ""] = r.split("/");
    const resOk = res === "*" || res === a.type.resource;
    const subOk = sub === "*" || sub === a.subresource;
    return resOk && subOk;
  });
}

function namespaceLabels(objects: ObjectApi, a: AdmissionAttributes): Record<string, string> | undefined {
  if (a.type.group === "" && a.type.resource === "namespaces") {
    return stringMap(a.object ?? a.oldObject ?? {}, "labels");
  }
  if (!a.type.namespaced) return undefined;
  const ns = objects.store.get(objects.registry.find("", "v1", "namespaces")!, "", a.namespace);
  return ns ? stringMap(ns, "labels") : {};
}

function webhookMatches(objects: ObjectApi, hook: KubeObject, a: AdmissionAttributes): boolean {
  const rules = Array.isArray(hook.rules) ? hook.rules.filter(isObject) : [];
  if (!rules.some((r) => ruleMatches(r, a))) return false;
  const nsLabels = namespaceLabels(objects, a);
  if (nsLabels && !labelSelectorMatches(hook.namespaceSelector, nsLabels)) return false;
  const objLabels = [a.object, a.oldObject].filter((o): o is KubeObject => o !== null).map((o) =>
    stringMap(o, "labels")
  );
  return objLabels.some((l) => labelSelectorMatches(hook.objectSelector, l));
}

function review(a: AdmissionAttributes, object: KubeObject | null): KubeObject {
  const kind = { group: a.type.group, version: a.type.version, kind: a.type.kind };
  const resource = { group: a.type.group, version: a.type.version, resource: a.type.resource };
  const optionsKind =
    { CREATE: "CreateOptions", UPDATE: "UpdateOptions", DELETE: "DeleteOptions" }[a.operation];
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: crypto.randomUUID(),
      kind,
      resource,
      ...(a.subresource ? { subResource: a.subresource, requestSubResource: a.subresource } : {}),
      requestKind: kind,
      requestResource: resource,
      name: a.name,
      ...(a.namespace ? { namespace: a.namespace } : {}),
      operation: a.operation,
      userInfo: a.user,
      object,
      oldObject: a.oldObject,
      dryRun: false,
      options: { kind: optionsKind, apiVersion: "meta.k8s.io/v1" },
    },
  };
}

/** Calls one webhook; resolves to its `response`, or undefined when it failed under failurePolicy Ignore. */
async function call(
  objects: ObjectApi,
  configName: string,
  hook: KubeObject,
  a: AdmissionAttributes,
  object: KubeObject | null,
): Promise<KubeObject | undefined> {
  const name = str(hook, "name");
  const ignore = str(hook, "failurePolicy") === "Ignore";
  const fail = (why: string): undefined => {
    if (ignore) {
      console.error(`kube-api: webhook "${name}" (${configName}) failed, ignored: ${why}`);
      return undefined;
    }
    throw new ApiError("InternalError", `Internal error occurred: failed calling webhook "${name}": ${why}`);
  };
  if (!strings(hook.admissionReviewVersions).includes("v1")) {
    return fail("admissionReviewVersions does not include v1, the only version this server sends");
  }
  const req = review(a, object);
  let answer: unknown;
  try {
    const target = resolveTarget(objects, isObject(hook.clientConfig) ? hook.clientConfig : {});
    const timeoutMs = (typeof hook.timeoutSeconds === "number" ? hook.timeoutSeconds : 10) * 1000;
    answer = await callWebhook(target, req, timeoutMs);
  } catch (e) {
    return fail(`failed to call webhook: ${(e as Error).message}`);
  }
  const res = isObject(answer) && isObject(answer.response) ? answer.response : undefined;
  if (!res) return fail("the answer has no response");
  if (str(res, "uid") !== str(req.request as KubeObject, "uid")) {
    return fail(`expected response.uid="${str(req.request as KubeObject, "uid")}", got "${str(res, "uid")}"`);
  }
  if (res.allowed !== true) {
    const status = isObject(res.status) ? res.status : {};
    const code = typeof status.code === "number" && status.code >= 400 ? status.code : 400;
    const reason = str(status, "message") || str(status, "reason") || "denied";
    throw new ApiError("BadRequest", `admission webhook "${name}" denied the request: ${reason}`, {}, code);
  }
  return res;
}

function configs(objects: ObjectApi, resource: string): KubeObject[] {
  const t = objects.registry.find("admissionregistration.k8s.io", "v1", resource)!;
  return objects.store.list(t, "").sort((x, y) => str(meta(x), "name").localeCompare(str(meta(y), "name")));
}

/**
 * Runs mutating then validating webhooks for one request; resolves to the (patched) object.
 *
 * @throws ApiError refusing the request: a denial (the webhook's code, 400 by default) or a failed call (500)
 */
export async function admissionChain(objects: ObjectApi, a: AdmissionAttributes): Promise<KubeObject | null> {
  if (SKIPPED_GROUPS.has(a.type.group)) return a.object;
  let object = a.object;
  for (const config of configs(objects, "mutatingwebhookconfigurations")) {
    for (const hook of (Array.isArray(config.webhooks) ? config.webhooks.filter(isObject) : [])) {
      if (!webhookMatches(objects, hook, { ...a, object })) continue;
      const res = await call(objects, str(meta(config), "name"), hook, a, object);
      if (!res || !str(res, "patch") || object === null) continue;
      if (str(res, "patchType") !== "JSONPatch") {
        throw new ApiError(
          "InternalError",
          `Internal error occurred: webhook "${str(hook, "name")}" sent unsupported patchType "${
            str(res, "patchType")
          }"`,
        );
      }
      const ops = JSON.parse(atob(str(res, "patch")));
      const patched = jsonPatch(object, ops);
      if (!isObject(patched)) {
        throw new ApiError("InternalError", `webhook "${str(hook, "name")}" patch did not give an object`);
      }
      patched.apiVersion = apiVersionOf(a.type);
      patched.kind = a.type.kind;
      object = patched;
    }
  }
  for (const config of configs(objects, "validatingwebhookconfigurations")) {
    for (const hook of (Array.isArray(config.webhooks) ? config.webhooks.filter(isObject) : [])) {
      if (webhookMatches(objects, hook, { ...a, object })) {
        await call(objects, str(meta(config), "name"), hook, a, object);
      }
    }
  }
  return object;
}
