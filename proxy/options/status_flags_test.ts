import assert from "node:assert/strict";
import { validateProxyFlags } from "./flags.ts";

const RAW = {
  namespace: "foo",
  workloadEntry: "app-1",
  address: "10.1.0.2",
  inbound: ["8080=127.0.0.1:8080"],
};
const PROBERS = JSON.stringify({ "/app-health/app/livez": { httpGet: { path: "/healthz", port: 8080 } } });

function validate(raw: Record<string, string | string[]>, env: Record<string, string> = {}) {
  return validateProxyFlags({ ...RAW, ...raw }, { env, cores: 1, hostname: () => "h" });
}

Deno.test("--statusPort and ISTIO_KUBE_APP_PROBERS: off by default, read when given", () => {
  const off = validate({});
  assert.deepEqual([off.errors, off.warnings], [[], []]);
  assert.equal(off.options.statusPort, 0);
  assert.deepEqual(off.options.appProbers, {});
  const on = validate({ statusPort: "15020" }, { ISTIO_KUBE_APP_PROBERS: PROBERS });
  assert.deepEqual(on.errors, []);
  assert.equal(on.options.statusPort, 15020);
  assert.deepEqual(on.options.appProbers, {
    "/app-health/app/livez": { httpGet: { path: "/healthz", port: 8080, scheme: "HTTP" } },
  });
});

Deno.test("--statusPort: bad values, collisions and probers without a status port are reported", () => {
  assert.deepEqual(validate({ statusPort: "70000" }).errors, [
    "--statusPort: 70000 is not a port number 0..65535 (0: no status listener)",
  ]);
  assert.deepEqual(validate({ statusPort: "8080" }).errors, [
    "--statusPort: 8080 is also the admin, an --inbound or the --outbound port",
  ]);
  assert.deepEqual(validate({}, { ISTIO_KUBE_APP_PROBERS: PROBERS }).warnings, [
    "ISTIO_KUBE_APP_PROBERS has no effect without --statusPort",
  ]);
  const bad = validate({ statusPort: "15020" }, {
    ISTIO_KUBE_APP_PROBERS: JSON.stringify({
      "/app-health/app/livez": { tcpSocket: { port: 22, host: "10.0.0.1" } },
    }),
  });
  assert.deepEqual(bad.errors, [
    "ISTIO_KUBE_APP_PROBERS: /app-health/app/livez.tcpSocket.host: only the pod's own loopback is probed " +
    "(localhost, 127.0.0.1, ::1)",
  ]);
});
