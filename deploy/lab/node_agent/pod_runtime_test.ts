import assert from "node:assert/strict";
import { hasSidecar, tokenRefreshAt } from "./pod_runtime.ts";

Deno.test("a projected token is asked for again at 80 % of its lifetime, at most after 24 h", () => {
  assert.equal(tokenRefreshAt(1_000, 600), 1_000 + 480_000);
  assert.equal(tokenRefreshAt(0, 43200), 0.8 * 43200_000);
  assert.equal(tokenRefreshAt(0, 7 * 86400), 24 * 3600_000);
});

Deno.test("a pod has the mesh's sidecar when it runs mesh-proxy or istio-proxy, also as a native sidecar", () => {
  const pod = (containers: string[], inits: string[] = []) => ({
    metadata: { name: "p" },
    spec: {
      containers: containers.map((name) => ({ name })),
      initContainers: inits.map((name) => ({ name })),
    },
  });
  assert.equal(hasSidecar(pod(["app", "mesh-proxy"])), true);
  assert.equal(hasSidecar(pod(["app"], ["mesh-init", "mesh-proxy"])), true);
  assert.equal(hasSidecar(pod(["app", "istio-proxy"])), true);
  assert.equal(hasSidecar(pod(["app"], ["mesh-init"])), false);
});
