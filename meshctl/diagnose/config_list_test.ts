import assert from "node:assert/strict";
import { configDefaults } from "./config_list.ts";

Deno.test("x config list: defaults, environment overrides, and a token that is never shown", () => {
  const rows = configDefaults({
    MESHCTL_DEBUG_ADDRESS: "10.0.0.1:8080",
    MESHCTL_XDS_TOKEN: "secret",
    KUBECONFIG: "",
  });
  assert.deepEqual(rows.map((r) => `${r.flag}|${r.value}|${r.from}`), [
    "debug-address|10.0.0.1:8080|env MESHCTL_DEBUG_ADDRESS",
    "lab||default",
    "meshNamespace|mesh-system|default",
    "orchconfig|~/.kube/config|default",
    "xds-port|15012|default",
    "xds-token|(set, not shown)|env MESHCTL_XDS_TOKEN",
  ]);
});
