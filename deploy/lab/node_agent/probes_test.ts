import assert from "node:assert/strict";
import { probePeriodMs, readinessCheck, readinessScript } from "./probes.ts";

Deno.test("an httpGet probe is curl to the pod IP (or host), named ports resolved, 200-399 passes", () => {
  const c = {
    name: "httpbin",
    ports: [{ name: "http", containerPort: 8080 }],
    readinessProbe: {
      httpGet: { path: "/status/200", port: "http", httpHeaders: [{ name: "X-A", value: "it's" }] },
      timeoutSeconds: 2,
    },
  };
  assert.equal(
    readinessScript(c, "10.0.0.3"),
    `code=$(curl -sk -o /dev/null -w '%{http_code}' --max-time 2 -H 'X-A: it'\\''s' 'http://10.0.0.3:8080/status/200'); ` +
      `[ "$code" -ge 200 ] && [ "$code" -lt 400 ]`,
  );
  const rewritten = {
    name: "a",
    readinessProbe: { httpGet: { path: "/app-health/a/readyz", port: 15020, scheme: "HTTP" } },
  };
  assert.match(
    readinessScript(rewritten, "10.0.0.3")!,
    /'http:\/\/10\.0\.0\.3:15020\/app-health\/a\/readyz'/,
  );
  assert.throws(
    () => readinessScript({ name: "x", readinessProbe: { httpGet: { port: "web" } } }, "10.0.0.3"),
    /container x: readinessProbe: port web is not a container port/,
  );
});

Deno.test("tcpSocket and exec probes; none or gRPC: undefined", () => {
  assert.equal(
    readinessScript({ name: "t", readinessProbe: { tcpSocket: { port: 80 } } }, "10.0.0.3"),
    `timeout 1 bash -c 'exec 3<>/dev/tcp/10.0.0.3/80' 2>/dev/null`,
  );
  assert.equal(
    readinessScript({ name: "e", readinessProbe: { exec: { command: ["cat", "/tmp/ready"] } } }, "10.0.0.3"),
    `timeout 1 'cat' '/tmp/ready' >/dev/null 2>&1`,
  );
  assert.equal(readinessScript({ name: "n" }, "10.0.0.3"), undefined);
  assert.equal(readinessScript({ name: "g", readinessProbe: {} }, "10.0.0.3"), undefined);
});

Deno.test("the pod's check: probes, else ports (loopback with the sidecar), and the sidecar's /ready; the proxy itself skipped", () => {
  const check = readinessCheck(
    [
      { name: "app", ports: [{ containerPort: 8080 }] },
      { name: "mesh-proxy", ports: [{ containerPort: 15090 }] },
    ],
    "10.0.0.3",
    true,
  );
  assert.equal(
    check,
    "(exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null || exit 1\n" +
      `[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 http://127.0.0.1:15000/ready)" = 200 ] || exit 1`,
  );
  assert.equal(readinessCheck([{ name: "sleep" }], "10.0.0.3", false), "true");
  assert.equal(probePeriodMs([{ name: "a" }]), 10_000);
  assert.equal(
    probePeriodMs([{ name: "a", readinessProbe: { periodSeconds: 3 } }, { name: "b", readinessProbe: {} }]),
    3000,
  );
});
