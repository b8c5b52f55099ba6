import assert from "node:assert/strict";
import { boundPorts, endpointPort, serviceSelectsWorkload } from "./service_ports.ts";

Deno.test("endpointPort: the workload's named port, else targetPort, else the number", () => {
  const cases: [Parameters<typeof endpointPort>, number][] = [
    [[{ number: 8000 }], 8000],
    [[{ number: 8000, targetPort: 8080 }], 8080],
    [[{ number: 8000, name: "http", targetPort: 8080 }, { http: 9090 }], 9090],
    [[{ number: 8000, name: "http" }, { grpc: 9090 }], 8000],
  ];
  for (const [args, want] of cases) assert.equal(endpointPort(...args), want, JSON.stringify(args));
});

Deno.test("serviceSelectsWorkload: same namespace and matching labels; no selector selects nothing", () => {
  const we = { metadata: { namespace: "foo" }, spec: { labels: { app: "a", v: "1" } } };
  const se = (namespace: string | undefined, labels?: Record<string, string>) => ({
    metadata: { name: "s", namespace },
    spec: labels ? { workloadSelector: { labels } } : {},
  });
  const cases: [ReturnType<typeof se>, boolean][] = [
    [se("foo", { app: "a" }), true],
    [se("foo", {}), true],
    [se("foo"), false],
    [se("bar", { app: "a" }), false],
    [se("foo", { app: "b" }), false],
    [se(undefined, { app: "a" }), false],
  ];
  for (const [s, want] of cases) assert.equal(serviceSelectsWorkload(s, we), want, JSON.stringify(s));
});

Deno.test("boundPorts: every port of every selecting service, with the container port", () => {
  const we = { metadata: { namespace: "foo" }, spec: { labels: { app: "a" }, ports: { tcp: 9000 } } };
  const services = [
    {
      metadata: { name: "web", namespace: "foo" },
      spec: {
        workloadSelector: { labels: { app: "a" } },
        ports: [{ number: 80, name: "http", protocol: "HTTP", targetPort: 8080 }, {
          number: 90,
          name: "tcp",
        }],
      },
    },
    { metadata: { name: "other", namespace: "foo" }, spec: { workloadSelector: { labels: { app: "b" } } } },
  ];
  assert.deepEqual(boundPorts(we, services).map((b) => [b.service, b.servicePort.number, b.containerPort]), [
    ["foo/web", 80, 8080],
    ["foo/web", 90, 9000],
  ]);
});
