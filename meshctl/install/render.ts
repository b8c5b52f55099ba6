/**
 * The install manifest of a spec (profile.ts): the manifests of deploy/kubernetes, embedded by codegen
 * (manifests.gen.ts), split into components, with the spec's images, replicas and meshConfig, the
 * ownership labels meshctl prunes and uninstalls by, and, for a revision, Istio's revisioned names and
 * labels (istio/istio manifests/charts/istio-control: `istiod-<rev>`, `istio-sidecar-injector-<rev>`,
 * label `istio.io/rev`; here `meshd-<rev>`, `mesh-sidecar-injector-<rev>`, `mesh.io/rev`). Pure.
 *
 * @module
 */
import { parse, parseAllDocuments, stringify } from "yaml";
import { EMBEDDED_MANIFESTS } from "./manifests.gen.ts";
import { type ComponentName, COMPONENTS, type InstallSpec } from "./profile.ts";

/** A Kubernetes object as plain JSON. */
export type KubeObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
};

/** The revision label (Istio's `istio.io/rev`). */
export const REV_LABEL = "mesh.io/rev";
/** The component that installed an object (Istio's `operator.istio.io/component`). */
export const COMPONENT_LABEL = "operator.mesh.io/component";
/** Marks what meshctl manages (Istio's `operator.istio.io/managed`). */
export const MANAGED_LABEL = "operator.mesh.io/managed";
/** The system namespace the manifests install into. */
export const SYSTEM_NAMESPACE = "mesh-system";

const FILE_COMPONENT: Record<string, ComponentName> = {
  "crds.yaml": "base",
  "namespace.yaml": "base",
  "rbac.yaml": "meshd",
  "meshd.yaml": "meshd",
  "webhooks.yaml": "meshd",
  "ingress_gateway.yaml": "ingressGateway",
};

/** The objects of one component, in the order the files list them. */
export interface RenderedComponent {
  name: ComponentName;
  objects: KubeObject[];
}

/**
 * The embedded manifests by component.
 *
 * @throws Error naming the file when codegen embedded one this module does not place in a component
 */
export function baseManifests(): Map<ComponentName, KubeObject[]> {
  const out = new Map<ComponentName, KubeObject[]>(COMPONENTS.map((c) => [c, []]));
  for (const { file, text } of EMBEDDED_MANIFESTS) {
    const component = FILE_COMPONENT[file];
    if (!component) throw new Error(`manifests.gen.ts: ${file}: no component takes it (render.ts)`);
    for (const doc of parseAllDocuments(text)) {
      const o = doc.toJS();
      if (o) out.get(component)!.push(o as KubeObject);
    }
  }
  return out;
}

/** The revision's name of an object named `name` (the default revision keeps the name). */
export function revisionedName(name: string, revision: string): string {
  return revision === "" ? name : `${name}-${revision}`;
}

/** The revision's label value: `default` for the default revision, as Istio. */
export function revisionLabel(revision: string): string {
  return revision === "" ? "default" : revision;
}

type Json = Record<string, unknown>;
const map = (o: Json, k: string): Json => (o[k] ??= {}) as Json;

/** Renders the enabled components of `spec`, each object labelled for ownership. */
export function render(spec: InstallSpec): RenderedComponent[] {
  const base = baseManifests();
  const out: RenderedComponent[] = [];
  for (const name of COMPONENTS) {
    if (!spec.components[name]?.enabled) continue;
    const objects = structuredClone(base.get(name)!).map((o) => shape(o, name, spec));
    out.push({ name, objects });
  }
  return out;
}

function shape(o: KubeObject, component: ComponentName, spec: InstallSpec): KubeObject {
  const rev = spec.revision;
  const labels: Record<string, string> = (o.metadata.labels ??= {});
  labels[COMPONENT_LABEL] = component;
  labels[MANAGED_LABEL] = "Reconcile";
  if (component === "base") return o;
  labels[REV_LABEL] = revisionLabel(rev);
  const spec_ = o.spec as Json | undefined;
  if (o.kind === "Deployment" && spec_) {
    const sel = map(map(spec_, "selector"), "matchLabels");
    sel[REV_LABEL] = revisionLabel(rev);
    const tpl = map(spec_, "template");
    map(map(tpl, "metadata"), "labels")[REV_LABEL] = revisionLabel(rev);
    const replicas = spec.components[component].replicas;
    if (replicas !== undefined) spec_.replicas = replicas;
    const pod = map(tpl, "spec");
    for (const c of (pod.containers ?? []) as Json[]) c.image = image(String(c.image), spec);
  }
  if ((o.kind === "Service" || o.kind === "PodDisruptionBudget") && spec_) {
    const sel = o.kind === "Service" ? map(spec_, "selector") : map(map(spec_, "selector"), "matchLabels");
    sel[REV_LABEL] = revisionLabel(rev);
  }
  if (o.kind === "ConfigMap" && o.metadata.name === "mesh" && Object.keys(spec.meshConfig).length > 0) {
    const data = map(o as Json, "data");
    data.mesh = stringify(overlayJson((parse(String(data.mesh ?? "")) ?? {}) as Json, spec.meshConfig));
  }
  if (component === "meshd" && rev !== "") revisionMeshd(o, rev);
  return o;
}

function image(ref: string, spec: InstallSpec): string {
  const m = /^mesh\/(meshd|proxy):latest$/.exec(ref);
  if (!m || (spec.hub === undefined && spec.tag === undefined)) return ref;
  return `${spec.hub ?? "mesh"}/${m[1]}:${spec.tag ?? "latest"}`;
}

function overlayJson(a: Json, b: Json): Json {
  const out: Json = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const isMap = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x);
    out[k] = isMap(v) && isMap(out[k]) ? overlayJson(out[k] as Json, v) : v;
  }
  return out;
}

/** Renames meshd's objects and every reference to them for revision `rev`. */
function revisionMeshd(o: KubeObject, rev: string): void {
  const r = (n: unknown): string => revisionedName(String(n), rev);
  o.metadata.name = r(o.metadata.name);
  if (o.kind === "ClusterRoleBinding" || o.kind === "RoleBinding") {
    (o.roleRef as Json).name = r((o.roleRef as Json).name);
    for (const s of (o.subjects ?? []) as Json[]) s.name = r(s.name);
  }
  if (o.kind === "ClusterRole") {
    for (const rule of (o.rules ?? []) as Json[]) {
      if (Array.isArray(rule.resourceNames)) rule.resourceNames = rule.resourceNames.map(r);
    }
  }
  if (o.kind === "Deployment") {
    const pod = ((o.spec as Json).template as Json).spec as Json;
    pod.serviceAccountName = r(pod.serviceAccountName);
    for (const v of (pod.volumes ?? []) as Json[]) {
      if (v.configMap) (v.configMap as Json).name = r((v.configMap as Json).name);
    }
    for (const c of (pod.containers ?? []) as Json[]) {
      const env = (c.env ??= []) as Json[];
      for (const e of env) if (String(e.name).endsWith("_WEBHOOK_CONFIG_NAME")) e.value = r(e.value);
      env.push({ name: "REVISION", value: rev });
    }
  }
  if (o.kind === "MutatingWebhookConfiguration" || o.kind === "ValidatingWebhookConfiguration") {
    const hooks = (o.webhooks ?? []) as Json[];
    for (const h of hooks) {
      const svc = (h.clientConfig as Json).service as Json;
      svc.name = r(svc.name);
    }
    // A revision injects only where its revision is asked for (Istio's revisioned injector): the
    // namespace label mesh.io/rev=<rev>, or the pod label in a namespace without injection labels.
    if (o.kind === "MutatingWebhookConfiguration") o.webhooks = revisionInjectors(hooks, rev);
  }
}

function revisionInjectors(hooks: Json[], rev: string): Json[] {
  const byNs = hooks.find((h) => String(h.name).startsWith("rev.namespace."));
  const byObject = hooks.find((h) => String(h.name).startsWith("object."));
  if (!byNs || !byObject) {
    throw new Error("webhooks.yaml: the rev.namespace and object injectors are missing");
  }
  const ns = structuredClone(byNs);
  ns.namespaceSelector = {
    matchExpressions: [
      { key: "mesh-injection", operator: "DoesNotExist" },
      { key: "istio-injection", operator: "DoesNotExist" },
      { key: REV_LABEL, operator: "In", values: [rev] },
    ],
  };
  const obj = structuredClone(byObject);
  obj.name = `rev.${String(byObject.name)}`;
  obj.objectSelector = {
    matchExpressions: [
      { key: "sidecar.mesh.io/inject", operator: "NotIn", values: ["false"] },
      { key: REV_LABEL, operator: "In", values: [rev] },
    ],
  };
  return [ns, obj];
}

/** The objects as one YAML stream, as `manifest generate` prints them. */
export function manifestYaml(components: RenderedComponent[]): string {
  return components.flatMap((c) => c.objects).map((o) => stringify(o, { lineWidth: 0 })).join("---\n");
}
