import assert from "node:assert/strict";
import { precheck, type PrecheckInput } from "./precheck.ts";

const INJECTOR = {
  metadata: { name: "mesh-sidecar-injector" },
  webhooks: [{ name: "namespace.sidecar-injector.mesh.io" }],
};
const BASE: PrecheckInput = {
  version: { major: "1", minor: "32", gitVersion: "v1.32.0" },
  meshNamespace: "mesh-system",
  revision: "default",
  deployments: [],
  webhookConfigs: [INJECTOR],
  pods: [],
  skipControlPlane: false,
};
const proxied = (name: string, labels: Record<string, string> = {}) => ({
  metadata: { name, namespace: "foo", labels },
  spec: { containers: [{ name: "app" }, { name: "mesh-proxy" }] },
});

const CASES: [string, Partial<PrecheckInput>, string[]][] = [
  ["a clean cluster", {}, []],
  ["Kubernetes 1.28 is too old", { version: { major: "1", minor: "28", gitVersion: "v1.28.3" } }, [
    "IST0142",
  ]],
  ["a minor with a vendor suffix (29+) is read as 29", { version: { major: "1", minor: "29+" } }, []],
  [
    "meshd of the revision already installed",
    { deployments: [{ metadata: { name: "meshd", namespace: "mesh-system", labels: { app: "meshd" } } }] },
    ["MESH0003"],
  ],
  [
    "meshd of another revision is not this install",
    {
      deployments: [{
        metadata: {
          name: "meshd-canary",
          namespace: "mesh-system",
          labels: { app: "meshd", "mesh.io/rev": "canary" },
        },
      }],
    },
    [],
  ],
  ["Istio's injector", { webhookConfigs: [INJECTOR, { metadata: { name: "istio-sidecar-injector" } }] }, [
    "MESH0004",
  ]],
  [
    "--skip-controlplane skips both control plane checks",
    {
      skipControlPlane: true,
      webhookConfigs: [INJECTOR, { metadata: { name: "istio-sidecar-injector" } }],
      deployments: [{ metadata: { name: "meshd", namespace: "mesh-system", labels: { app: "meshd" } } }],
    },
    [],
  ],
  ["a proxy of a served revision", { pods: [proxied("a")] }, []],
  ["a proxy of a revision no injector serves", { pods: [proxied("a", { "istio.io/rev": "canary" })] }, [
    "MESH0005",
  ]],
  ["every proxy is orphaned without injectors", {
    webhookConfigs: [],
    pods: [proxied("a"), { metadata: { name: "b" } }],
  }, [
    "MESH0005",
  ]],
];

for (const [name, over, want] of CASES) {
  Deno.test(`precheck: ${name}`, () => {
    assert.deepEqual(precheck({ ...BASE, ...over }).map((m) => m.type.code), want);
  });
}
