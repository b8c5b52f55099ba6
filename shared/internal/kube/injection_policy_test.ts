import assert from "node:assert/strict";
import { type InjectionContext, injectionDecision, type JsonObject } from "./injection_policy.ts";

/** The parts of Istio's httpbin sample pod the rules read. */
function httpbinPod(): JsonObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      generateName: "httpbin-6f4d8f7b9c-",
      namespace: "foo",
      labels: { app: "httpbin", version: "v1" },
    },
    spec: { containers: [{ name: "httpbin", image: "docker.io/kong/httpbin:0.1.0" }] },
  };
}

function pod(
  meta: { labels?: Record<string, string>; annotations?: Record<string, string> },
  hostNetwork = false,
) {
  const p = httpbinPod();
  const m = p.metadata as JsonObject;
  m.labels = { ...(m.labels as Record<string, string>), ...meta.labels };
  if (meta.annotations) m.annotations = meta.annotations;
  if (hostNetwork) (p.spec as JsonObject).hostNetwork = true;
  return p;
}

const ctx = (over: Partial<InjectionContext> = {}): InjectionContext => ({
  namespace: "foo",
  namespaceLabels: {},
  revision: "default",
  policy: "enabled",
  ...over,
});

const CASES: { name: string; pod: JsonObject; ctx: InjectionContext; inject: boolean; reason: RegExp }[] = [
  {
    name: "mesh namespace label",
    pod: pod({}),
    ctx: ctx({ namespaceLabels: { "mesh-injection": "enabled" } }),
    inject: true,
    reason: /mesh-injection=enabled/,
  },
  {
    name: "Istio namespace label",
    pod: pod({}),
    ctx: ctx({ namespaceLabels: { "istio-injection": "enabled" } }),
    inject: true,
    reason: /istio-injection=enabled/,
  },
  {
    name: "namespace disabled beats the pod's true",
    pod: pod({ labels: { "sidecar.istio.io/inject": "true" } }),
    ctx: ctx({ namespaceLabels: { "istio-injection": "disabled" } }),
    inject: false,
    reason: /istio-injection=disabled/,
  },
  {
    name: "unlabelled namespace",
    pod: pod({}),
    ctx: ctx(),
    inject: false,
    reason: /no injection or revision label/,
  },
  {
    name: "pod label true in an unlabelled namespace",
    pod: pod({ labels: { "sidecar.mesh.io/inject": "true" } }),
    ctx: ctx(),
    inject: true,
    reason: /pod label sidecar.mesh.io\/inject=true/,
  },
  {
    name: "pod label false in an enabled namespace",
    pod: pod({ labels: { "sidecar.istio.io/inject": "false" } }),
    ctx: ctx({ namespaceLabels: { "mesh-injection": "enabled" } }),
    inject: false,
    reason: /label sidecar.istio.io\/inject=false/,
  },
  {
    name: "pod annotation false (Istio's deprecated form)",
    pod: pod({ annotations: { "sidecar.istio.io/inject": "false" } }),
    ctx: ctx({ namespaceLabels: { "istio-injection": "enabled" } }),
    inject: false,
    reason: /annotation sidecar.istio.io\/inject=false/,
  },
  {
    name: "the label wins over the annotation",
    pod: pod({
      labels: { "sidecar.mesh.io/inject": "true" },
      annotations: { "sidecar.mesh.io/inject": "false" },
    }),
    ctx: ctx(),
    inject: true,
    reason: /label/,
  },
  {
    name: "namespace revision of this meshd",
    pod: pod({}),
    ctx: ctx({ namespaceLabels: { "mesh.io/rev": "default" } }),
    inject: true,
    reason: /mesh.io\/rev=default/,
  },
  {
    name: "Istio revision label of another meshd",
    pod: pod({}),
    ctx: ctx({ namespaceLabels: { "istio.io/rev": "canary" } }),
    inject: false,
    reason: /not this meshd's/,
  },
  {
    name: "pod revision label",
    pod: pod({ labels: { "istio.io/rev": "canary" } }),
    ctx: ctx({ revision: "canary" }),
    inject: true,
    reason: /istio.io\/rev=canary/,
  },
  {
    name: "hostNetwork",
    pod: pod({ labels: { "sidecar.mesh.io/inject": "true" } }, true),
    ctx: ctx(),
    inject: false,
    reason: /host network/,
  },
  {
    name: "already injected by the mesh",
    pod: pod({ annotations: { "sidecar.mesh.io/status": "{}" } }),
    ctx: ctx({ namespaceLabels: { "mesh-injection": "enabled" } }),
    inject: false,
    reason: /already injected/,
  },
  {
    name: "already injected by Istio",
    pod: pod({ annotations: { "sidecar.istio.io/status": "{}" } }),
    ctx: ctx({ namespaceLabels: { "mesh-injection": "enabled" } }),
    inject: false,
    reason: /sidecar.istio.io\/status/,
  },
  {
    name: "kube-system",
    pod: pod({ labels: { "sidecar.mesh.io/inject": "true" } }),
    ctx: ctx({ namespace: "kube-system" }),
    inject: false,
    reason: /never injected/,
  },
  {
    name: "labels unknown: policy enabled",
    pod: pod({}),
    ctx: ctx({ namespaceLabels: undefined }),
    inject: true,
    reason: /policy is enabled/,
  },
  {
    name: "labels unknown: policy disabled",
    pod: pod({}),
    ctx: ctx({ namespaceLabels: undefined, policy: "disabled" }),
    inject: false,
    reason: /policy is disabled/,
  },
];

for (const c of CASES) {
  Deno.test(`injectionDecision: ${c.name}`, () => {
    const d = injectionDecision(c.pod, c.ctx);
    assert.equal(d.inject, c.inject, d.reason);
    assert.match(d.reason, c.reason);
  });
}

Deno.test("injectionDecision: a value other than true or false is an error naming the field", () => {
  assert.throws(
    () => injectionDecision(pod({ labels: { "sidecar.istio.io/inject": "yes" } }), ctx()),
    /^Error: metadata\.labels\.sidecar\.istio\.io\/inject: "yes" must be true or false$/,
  );
});
