import assert from "node:assert/strict";
import { DEFAULT_MESH_CONFIG, loadMeshConfig } from "./mesh_config.ts";
import { DEFAULT_PROXY_SETTINGS } from "../../shared/proxy_settings/mod.ts";

async function withFile(text: string | undefined, fn: (path: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/mesh`;
  if (text !== undefined) await Deno.writeTextFile(path, text);
  try {
    await fn(path);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a missing file is the default mesh", async () => {
  await withFile(
    undefined,
    async (p) => assert.deepEqual((await loadMeshConfig(p)).config, DEFAULT_MESH_CONFIG),
  );
});

Deno.test("rootNamespace and trustDomain are read; other fields warn", async () => {
  await withFile(
    "rootNamespace: istio-system\ntrustDomain: example.org\nenableTracing: true\n",
    async (p) => {
      const r = await loadMeshConfig(p);
      assert.deepEqual(r.config, {
        rootNamespace: "istio-system",
        trustDomain: "example.org",
        proxySettings: DEFAULT_PROXY_SETTINGS,
      });
      assert.deepEqual(r.warnings, [`--meshConfig ${p}: field enableTracing has no effect yet`]);
    },
  );
});

const bad: [string, RegExp][] = [
  ["rootNamespace: Not_A_Label\n", /rootNamespace: "Not_A_Label" is not a valid rootNamespace/],
  ["trustDomain: 42\n", /trustDomain: 42 is not a valid trustDomain/],
  ["- a\n", /expected a map/],
  ["a: [\n", /invalid YAML/],
  ["pathNormalization: BASE\n", /pathNormalization: expected a map/],
  [
    "pathNormalization: {normalization: merge}\n",
    /: pathNormalization\.normalization: "merge" is not one of NONE, BASE, MERGE_SLASHES, DECODE_AND_MERGE_SLASHES$/,
  ],
  [
    "defaultConfig: {gatewayTopology: {numTrustedProxies: -2}}\n",
    /: defaultConfig\.gatewayTopology\.numTrustedProxies: -2 is not a whole number from 0 to 255$/,
  ],
  ["denialExplanation: [a]\n", /: denialExplanation: expected a map$/],
  [
    "denialExplanation: {principals: [spiffe://cluster.local/ns/a/sa/b]}\n",
    /: denialExplanation\.principals\[0\]: "spiffe:\/\/cluster.local\/ns\/a\/sa\/b" is not a principal/,
  ],
  [
    "denialExplanation: {ipBlocks: [localhost]}\n",
    /: denialExplanation\.ipBlocks\[0\]: "localhost" is not an IP/,
  ],
  [
    "outboundTrafficPolicy: {mode: DENY}\n",
    /: outboundTrafficPolicy\.mode: "DENY" is not one of ALLOW_ANY, REGISTRY_ONLY$/,
  ],
];

Deno.test("outboundTrafficPolicy.mode: pushed to proxies; ALLOW_ANY by default", async () => {
  await withFile("outboundTrafficPolicy: {mode: REGISTRY_ONLY}\n", async (p) => {
    const r = await loadMeshConfig(p);
    assert.equal(r.config.proxySettings.outboundTrafficPolicy, "REGISTRY_ONLY");
    assert.deepEqual(r.warnings, []);
  });
  await withFile("rootNamespace: mesh-system\n", async (p) => {
    assert.equal((await loadMeshConfig(p)).config.proxySettings.outboundTrafficPolicy, "ALLOW_ANY");
  });
});

Deno.test("denialExplanation: who may read a denial's reason; nobody by default; other fields warn", async () => {
  await withFile(
    "denialExplanation:\n  principals: [cluster.local/ns/mesh-system/*]\n  ipBlocks: [127.0.0.1/32]\n  namespaces: [x]\n",
    async (p) => {
      const r = await loadMeshConfig(p);
      assert.deepEqual(r.config.proxySettings.denialExplanation, {
        principals: ["cluster.local/ns/mesh-system/*"],
        ipBlocks: ["127.0.0.1/32"],
      });
      assert.deepEqual(r.warnings, [
        `--meshConfig ${p}: field denialExplanation.namespaces has no effect yet`,
      ]);
    },
  );
  assert.deepEqual(DEFAULT_PROXY_SETTINGS.denialExplanation, { principals: [], ipBlocks: [] });
});

Deno.test("the proxy settings are read from Istio's fields; their unread neighbours warn", async () => {
  await withFile(
    "pathNormalization:\n  normalization: MERGE_SLASHES\ndefaultConfig:\n  gatewayTopology:\n" +
      "    numTrustedProxies: 2\n    forwardClientCertDetails: SANITIZE\n  concurrency: 2\n",
    async (p) => {
      const r = await loadMeshConfig(p);
      assert.deepEqual(r.config.proxySettings, {
        ...DEFAULT_PROXY_SETTINGS,
        pathNormalization: "MERGE_SLASHES",
        numTrustedProxies: 2,
      });
      assert.deepEqual(r.warnings, [
        `--meshConfig ${p}: field defaultConfig.concurrency has no effect yet`,
        `--meshConfig ${p}: field defaultConfig.gatewayTopology.forwardClientCertDetails has no effect yet`,
      ]);
    },
  );
});
for (const [text, message] of bad) {
  Deno.test(`an invalid mesh config is an error, not the default: ${JSON.stringify(text)}`, async () => {
    await withFile(text, async (p) => {
      await assert.rejects(() => loadMeshConfig(p), message);
    });
  });
}
