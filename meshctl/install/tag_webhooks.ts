/**
 * Revision tags as webhook configurations (seed 002 "tag"; istioctl's `tag`, istio/istio
 * istioctl/pkg/tag/generate.go): a tag `<t>` for revision `<r>` is a MutatingWebhookConfiguration
 * `mesh-revision-tag-<t>`, labelled `mesh.io/tag=<t>` and `mesh.io/rev=<r>`, whose webhooks call
 * revision `<r>`'s meshd (clientConfig and caBundle copied from `<r>`'s injector) for namespaces
 * labelled `mesh.io/rev=<t>` and pods labelled so. The tag `default` also takes Istio's default
 * selectors (`mesh-injection=enabled`, `istio-injection=enabled`, pods labelled
 * `sidecar.mesh.io/inject=true`) and validation (`mesh-default-validator`), and the default
 * revision's own injector is deactivated (its selectors made never to match), as istioctl does. Pure.
 *
 * @module
 */
import { baseManifests, COMPONENT_LABEL, type KubeObject, MANAGED_LABEL, REV_LABEL } from "./render.ts";

/** The tag label (Istio's `istio.io/tag`). */
export const TAG_LABEL = "mesh.io/tag";
/** The validating configuration of the default tag (Istio's `istio-validator-...` for the tag). */
export const DEFAULT_VALIDATOR = "mesh-default-validator";
/** The default revision's injector, deactivated when the tag `default` is set. */
export const DEFAULT_INJECTOR = "mesh-sidecar-injector";
/** A selector nothing matches (Istio's `istio.io/deactivated: never-match`). */
export const NEVER_MATCH = {
  matchExpressions: [{ key: "mesh.io/deactivated", operator: "In", values: ["never-match"] }],
};

type Json = Record<string, unknown>;

/** The tag's webhook configuration name unless `--webhook-name` is given. */
export function tagWebhookName(tag: string): string {
  return `mesh-revision-tag-${tag}`;
}

function defaultHooks(kind: string): Json[] {
  const o = baseManifests().get("meshd")!.find((x) => x.kind === kind);
  if (!o) throw new Error(`manifests.gen.ts: no ${kind}`);
  return structuredClone(o.webhooks as Json[]);
}

const NO_INJECTION_LABELS = [
  { key: "mesh-injection", operator: "DoesNotExist" },
  { key: "istio-injection", operator: "DoesNotExist" },
];
const NOT_OPTED_OUT = {
  matchExpressions: [{ key: "sidecar.mesh.io/inject", operator: "NotIn", values: ["false"] }],
};

/**
 * The tag's MutatingWebhookConfiguration.
 *
 * @param revisionInjector the live injector of the target revision (its first webhook's clientConfig
 *   and settings are used)
 * @throws Error when the injector has no webhooks
 */
export function tagInjector(
  tag: string,
  revision: string,
  revisionInjector: Json,
  webhookName: string,
): KubeObject {
  const hooks = (revisionInjector.webhooks ?? []) as Json[];
  if (hooks.length === 0) throw new Error(`the injector of revision ${revision} has no webhooks`);
  const like = (name: string, namespaceSelector: unknown, objectSelector: unknown): Json => ({
    ...structuredClone(hooks[0]),
    name,
    namespaceSelector,
    objectSelector,
  });
  const webhooks: Json[] = [
    like("rev.namespace.sidecar-injector.mesh.io", {
      matchExpressions: [...NO_INJECTION_LABELS, { key: REV_LABEL, operator: "In", values: [tag] }],
    }, NOT_OPTED_OUT),
    like("rev.object.sidecar-injector.mesh.io", {
      matchExpressions: [...NO_INJECTION_LABELS, { key: REV_LABEL, operator: "DoesNotExist" }],
    }, {
      matchExpressions: [
        { key: "sidecar.mesh.io/inject", operator: "NotIn", values: ["false"] },
        { key: REV_LABEL, operator: "In", values: [tag] },
      ],
    }),
  ];
  if (tag === "default") {
    for (const h of defaultHooks("MutatingWebhookConfiguration")) {
      if (String(h.name).startsWith("rev.")) continue;
      webhooks.push(like(String(h.name), h.namespaceSelector, h.objectSelector));
    }
  }
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "MutatingWebhookConfiguration",
    metadata: { name: webhookName, labels: ownership(tag, revision) },
    webhooks,
  };
}

/** The default tag's ValidatingWebhookConfiguration, calling `revision`'s meshd. */
export function defaultValidator(revision: string, revisionInjector: Json): KubeObject {
  const client = ((revisionInjector.webhooks ?? []) as Json[])[0]?.clientConfig as Json | undefined;
  const svc = client?.service as Json | undefined;
  const webhooks = defaultHooks("ValidatingWebhookConfiguration").map((h) => {
    const cc = structuredClone(h.clientConfig as Json);
    if (svc) (cc.service as Json).name = svc.name;
    if (client?.caBundle !== undefined) cc.caBundle = client.caBundle;
    return { ...h, clientConfig: cc };
  });
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name: DEFAULT_VALIDATOR, labels: ownership("default", revision) },
    webhooks,
  };
}

function ownership(tag: string, revision: string): Record<string, string> {
  return {
    [TAG_LABEL]: tag,
    [REV_LABEL]: revision,
    [COMPONENT_LABEL]: "meshd",
    [MANAGED_LABEL]: "Reconcile",
    "app.kubernetes.io/part-of": "mesh",
  };
}

/** The merge patch that makes every webhook of the default injector never match (Istio's deactivation). */
export function deactivationPatch(injector: Json): Json {
  const webhooks = ((injector.webhooks ?? []) as Json[]).map((h) => ({
    ...h,
    namespaceSelector: NEVER_MATCH,
    objectSelector: NEVER_MATCH,
  }));
  return { webhooks };
}
