// deno-lint-ignore-file no-explicit-any -- the rendered objects are read by path in these assertions
import assert from "node:assert/strict";
import { parse } from "yaml";
import { buildSpec } from "./profile.ts";
import { COMPONENT_LABEL, type KubeObject, render, REV_LABEL } from "./render.ts";

const objects = (user: Record<string, unknown>, rev = ""): KubeObject[] =>
  render(buildSpec(user, rev).spec).flatMap((c) => c.objects);
const find = (os: KubeObject[], kind: string, name: string): Record<string, any> => {
  const o = os.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(o, `${kind} ${name} rendered`);
  return o;
};

Deno.test("render: every object carries the ownership labels; meshd's and the gateway's the revision", () => {
  for (const o of objects({})) {
    assert.ok(o.metadata.labels?.[COMPONENT_LABEL], `${o.kind} ${o.metadata.name}`);
    const base = o.metadata.labels?.[COMPONENT_LABEL] === "base";
    assert.equal(
      o.metadata.labels?.[REV_LABEL],
      base ? undefined : "default",
      `${o.kind} ${o.metadata.name}`,
    );
  }
  assert.equal(objects({ profile: "empty" }).length, 0);
  assert.ok(!objects({ profile: "minimal" }).some((o) => o.metadata.name === "mesh-ingressgateway"));
});

Deno.test("render: a revision renames meshd's objects and every reference, selects its own pods, injects only its label", () => {
  const os = objects({}, "canary");
  const d = find(os, "Deployment", "meshd-canary");
  assert.equal(d.spec.selector.matchLabels[REV_LABEL], "canary");
  assert.equal(d.spec.template.metadata.labels[REV_LABEL], "canary");
  const pod = d.spec.template.spec;
  assert.equal(pod.serviceAccountName, "meshd-canary");
  assert.equal(pod.volumes.find((v: any) => v.configMap).configMap.name, "mesh-canary");
  const env = Object.fromEntries(pod.containers[0].env.map((e: any) => [e.name, e.value]));
  assert.equal(env.REVISION, "canary");
  assert.equal(env.INJECTION_WEBHOOK_CONFIG_NAME, "mesh-sidecar-injector-canary");
  assert.equal(env.VALIDATION_WEBHOOK_CONFIG_NAME, "mesh-mesh-system-canary");
  assert.equal(find(os, "Service", "meshd-canary").spec.selector[REV_LABEL], "canary");
  const crb = find(os, "ClusterRoleBinding", "meshd-mesh-system-canary");
  assert.equal(crb.roleRef.name, "meshd-mesh-system-canary");
  assert.equal(crb.subjects[0].name, "meshd-canary");
  const rules = find(os, "ClusterRole", "meshd-mesh-system-canary").rules as any[];
  assert.ok(rules.some((r) => r.resourceNames?.includes("mesh-sidecar-injector-canary")));
  const mwc = find(os, "MutatingWebhookConfiguration", "mesh-sidecar-injector-canary");
  assert.deepEqual(mwc.webhooks.map((h: any) => h.name), [
    "rev.namespace.sidecar-injector.mesh.io",
    "rev.object.sidecar-injector.mesh.io",
  ]);
  for (const h of mwc.webhooks) assert.equal(h.clientConfig.service.name, "meshd-canary");
  assert.ok(JSON.stringify(mwc.webhooks).includes('"values":["canary"]'));
  assert.ok(!JSON.stringify(mwc.webhooks).includes('"enabled"'), "no mesh-injection=enabled selector");
});

Deno.test("render: hub, tag, replicas and meshConfig reach the objects", () => {
  const os = objects({
    hub: "reg.example/mesh",
    tag: "1.2.3",
    components: { meshd: { replicas: 3 } },
    meshConfig: { trustDomain: "example.org" },
  });
  const d = find(os, "Deployment", "meshd");
  assert.equal(d.spec.replicas, 3);
  assert.equal(d.spec.template.spec.containers[0].image, "reg.example/mesh/meshd:1.2.3");
  assert.equal(
    find(os, "Deployment", "mesh-ingressgateway").spec.template.spec.containers[0].image,
    "reg.example/mesh/proxy:1.2.3",
  );
  const mesh = parse(find(os, "ConfigMap", "mesh").data.mesh);
  assert.deepEqual(mesh, { rootNamespace: "mesh-system", trustDomain: "example.org" });
});
