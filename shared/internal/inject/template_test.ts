import assert from "node:assert/strict";
import { defaultTemplate, loadTemplate, parseTemplate } from "./template.ts";

Deno.test("parseTemplate: Istio's value names set the image, ranges, uid, resources; config.policy", () => {
  const t = parseTemplate(
    {
      config: "policy: disabled\n",
      values: JSON.stringify({
        global: {
          hub: "registry.example/mesh",
          tag: "1.2.3",
          imagePullPolicy: "Always",
          proxy: {
            includeIPRanges: "10.96.0.0/12, 10.100.0.0/16",
            uid: 2000,
            resources: { limits: { cpu: "1" } },
          },
        },
      }),
    },
    "cm",
    "mesh-system",
  );
  assert.equal(t.policy, "disabled");
  assert.equal(t.image, "registry.example/mesh/proxy:1.2.3");
  assert.equal(t.imagePullPolicy, "Always");
  assert.deepEqual(t.includeIPRanges, ["10.96.0.0/12", "10.100.0.0/16"]);
  assert.equal(t.proxyUid, 2000);
  assert.deepEqual(t.resources, { limits: { cpu: "1" } });
  assert.equal(
    parseTemplate({ values: "global:\n  proxy:\n    image: my/proxy:9\n" }, "v", "x").image,
    "my/proxy:9",
  );
  assert.deepEqual(parseTemplate({}, "v", "ns"), defaultTemplate("ns"));
});

const BAD: [{ config?: string; values?: string }, RegExp][] = [
  [{ config: "policy: maybe" }, /^Error: cm: config\.policy: must be enabled or disabled$/],
  [{ config: "templates:\n  sidecar: '{{ .Values }}'" }, /^Error: cm: config\.templates: is not supported/],
  [
    { values: '{"global": {"proxy": {"includeIPRanges": "10.0.0.0/33"}}}' },
    /global\.proxy\.includeIPRanges: "10\.0\.0\.0\/33" is not a CIDR/,
  ],
  [
    { values: '{"global": {"proxy": {"excludeIPRanges": "1.2.3.4; reboot"}}}' },
    /global\.proxy\.excludeIPRanges: "1\.2\.3\.4; reboot" is not a CIDR/,
  ],
  [{ values: '{"global": {"proxy": {"uid": 0}}}' }, /global\.proxy\.uid: must be a positive integer/],
  [{ values: '{"global": {"hub": 5}}' }, /global\.hub: must be a non-empty string/],
  [{ values: "[1, 2]" }, /^Error: cm: values: must be a map$/],
  [{ values: "a: [" }, /^Error: cm: values: not YAML or JSON/],
];
for (const [texts, want] of BAD) {
  Deno.test(`parseTemplate refuses ${JSON.stringify(texts)}`, () => {
    assert.throws(() => parseTemplate(texts, "cm", "mesh-system"), want);
  });
}

Deno.test("loadTemplate: a mounted ConfigMap directory, a ConfigMap file, and no file at all", async () => {
  const dir = await Deno.makeTempDir({ prefix: "meshd-inject-" });
  try {
    await Deno.writeTextFile(`${dir}/values`, '{"global": {"tag": "7"}}');
    assert.equal((await loadTemplate(dir, "mesh-system")).image, "mesh/proxy:7");
    const file = `${dir}/cm.yaml`;
    await Deno.writeTextFile(
      file,
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: istio-sidecar-injector\ndata:\n  config: |\n    policy: disabled\n  values: |\n    {"global": {"tag": "8"}}\n',
    );
    const t = await loadTemplate(file, "mesh-system");
    assert.deepEqual([t.policy, t.image], ["disabled", "mesh/proxy:8"]);
    await Deno.writeTextFile(file, "kind: Secret\n");
    await assert.rejects(loadTemplate(file, "x"), new RegExp(`^Error: ${file}: kind: must be ConfigMap`));
    assert.deepEqual(await loadTemplate(`${dir}/none`, "x"), defaultTemplate("x"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a revision's pods reach their own meshd: meshd-<revision>, as Istio's istiod-<revision>", () => {
  assert.equal(defaultTemplate("mesh-system").discoveryAddress, "meshd.mesh-system.svc:15012");
  assert.equal(defaultTemplate("mesh-system", "default").discoveryAddress, "meshd.mesh-system.svc:15012");
  assert.equal(
    defaultTemplate("mesh-system", "canary").discoveryAddress,
    "meshd-canary.mesh-system.svc:15012",
  );
  assert.equal(parseTemplate({}, "t", "ns", "canary").discoveryAddress, "meshd-canary.ns.svc:15012");
});
