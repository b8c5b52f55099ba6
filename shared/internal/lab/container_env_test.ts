import assert from "node:assert/strict";
import { containerEnv, expandCommand } from "./container_env.ts";
import type { PlannedWorkload } from "./plan.ts";

Deno.test("expandCommand: $(VAR) as Kubernetes expands it", () => {
  const env = { BIND_IP: "127.0.0.1", POD_IP: "10.0.0.3" };
  const cases: [string, string][] = [
    ["$(BIND_IP):8080", "127.0.0.1:8080"],
    ["$(POD_IP)-$(BIND_IP)", "10.0.0.3-127.0.0.1"],
    ["$$(BIND_IP)", "$(BIND_IP)"],
    ["$(UNKNOWN)", "$(UNKNOWN)"],
    ["$BIND_IP ${BIND_IP}", "$BIND_IP ${BIND_IP}"],
  ];
  for (const [arg, want] of cases) assert.equal(expandCommand([arg], env)[0], want, arg);
});

Deno.test("containerEnv: BIND_IP is loopback behind a sidecar, every address without one", () => {
  const w = {
    name: "httpbin",
    namespace: "foo",
    serviceAccount: "httpbin",
    address: "10.0.0.3",
    sidecar: true,
  } as PlannedWorkload;
  assert.deepEqual(containerEnv(w), {
    POD_IP: "10.0.0.3",
    POD_NAME: "httpbin",
    POD_NAMESPACE: "foo",
    SERVICE_ACCOUNT: "httpbin",
    BIND_IP: "127.0.0.1",
  });
  assert.equal(containerEnv({ ...w, sidecar: false }).BIND_IP, "0.0.0.0");
});
