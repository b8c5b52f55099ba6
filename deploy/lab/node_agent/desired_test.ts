import assert from "node:assert/strict";
import {
  containerEnvironment,
  dnatRules,
  endpointSliceFor,
  type Obj,
  podFromDeployment,
  podHostsFile,
  serviceRoutes,
} from "./desired.ts";

function pod(name: string, labels: Record<string, string>, ip?: string, ready = true): Obj {
  return {
    metadata: { name, namespace: "foo", uid: `uid-${name}`, labels },
    spec: { nodeName: "n", containers: [{ name: "c", ports: [{ name: "http", containerPort: 8080 }] }] },
    status: ip ? { podIP: ip, conditions: [{ type: "Ready", status: ready ? "True" : "False" }] } : {},
  };
}

const svc: Obj = {
  metadata: { name: "httpbin", namespace: "foo", uid: "svc-uid" },
  spec: {
    selector: { app: "httpbin" },
    clusterIP: "10.96.0.10",
    ports: [{ name: "http", port: 8000, targetPort: "http" }],
  },
};

Deno.test("a Service's EndpointSlice: selected pods with an IP, readiness, targetRef, named target port resolved", () => {
  const slice = endpointSliceFor(svc, [
    pod("b", { app: "httpbin" }, "10.0.0.4", false),
    pod("a", { app: "httpbin" }, "10.0.0.3"),
    pod("noip", { app: "httpbin" }),
    pod("other", { app: "sleep" }, "10.0.0.5"),
  ]) as unknown as {
    metadata: Obj["metadata"];
    ports: unknown[];
    endpoints: { addresses: string[]; conditions: { ready: boolean }; targetRef: { name: string } }[];
  };
  assert.deepStrictEqual(slice.metadata.labels?.["kubernetes.io/service-name"], "httpbin");
  assert.deepStrictEqual(slice.ports, [{ name: "http", port: 8080, protocol: "TCP" }]);
  assert.deepStrictEqual(slice.endpoints.map((e) => [e.addresses[0], e.conditions.ready, e.targetRef.name]), [
    ["10.0.0.3", true, "a"],
    ["10.0.0.4", false, "b"],
  ]);
  assert.deepStrictEqual(
    endpointSliceFor({ ...svc, spec: { ...svc.spec, selector: undefined } }, []),
    undefined,
  );
});

Deno.test("routes take the first ready endpoint per port; DNAT rules and hosts names follow", () => {
  const slice = endpointSliceFor(svc, [
    pod("b", { app: "httpbin" }, "10.0.0.4", false),
    pod("a", { app: "httpbin" }, "10.0.0.3"),
  ])!;
  const routes = serviceRoutes([svc, {
    metadata: { name: "h", namespace: "x" },
    spec: { clusterIP: "None" },
  }], [slice]);
  assert.deepStrictEqual(routes, [{
    name: "httpbin",
    namespace: "foo",
    clusterIP: "10.96.0.10",
    ports: [{ port: 8000, endpoint: "10.0.0.3:8080" }],
  }]);
  assert.deepStrictEqual(dnatRules(routes), [[
    "-w",
    "-t",
    "nat",
    "-A",
    "LAB-SERVICES",
    "-p",
    "tcp",
    "-d",
    "10.96.0.10/32",
    "--dport",
    "8000",
    "-j",
    "DNAT",
    "--to-destination",
    "10.0.0.3:8080",
  ]]);
  const hosts = podHostsFile({ name: "sleep", namespace: "foo", ip: "10.0.0.9" }, {
    host: "meshd.mesh-system.svc",
    ip: "10.0.0.2",
  }, routes);
  assert.deepStrictEqual(
    hosts.split("\n").at(-2),
    "10.96.0.10\thttpbin httpbin.foo httpbin.foo.svc httpbin.foo.svc.cluster.local",
  );
  const other = podHostsFile(
    { name: "s", namespace: "bar", ip: "10.0.0.8" },
    { host: "m", ip: "10.0.0.2" },
    routes,
  );
  assert.deepStrictEqual(
    other.split("\n").at(-2),
    "10.96.0.10\thttpbin.foo httpbin.foo.svc httpbin.foo.svc.cluster.local",
  );
});

Deno.test("a Deployment's pod: template labels with the hash, generateName, owner", () => {
  const d: Obj = {
    metadata: { name: "httpbin", namespace: "foo", uid: "d-uid" },
    spec: { replicas: 1, template: { metadata: { labels: { app: "httpbin" } }, spec: { containers: [] } } },
  };
  const p = podFromDeployment(d);
  const hash = p.metadata.labels!["pod-template-hash"];
  assert.deepStrictEqual(p.metadata.generateName, `httpbin-${hash}-`);
  assert.deepStrictEqual(p.metadata.labels!.app, "httpbin");
  assert.deepStrictEqual(p.metadata.ownerReferences?.[0].uid, "d-uid");
  assert.deepStrictEqual(podFromDeployment(d).metadata.labels!["pod-template-hash"], hash);
});

Deno.test("container env: values, the downward API, $(VAR) of earlier ones; other sources refused by name", () => {
  const p = pod("httpbin-1", { app: "httpbin" });
  p.spec.serviceAccountName = "httpbin";
  const env = containerEnvironment(
    p,
    {
      name: "mesh-proxy",
      env: [
        { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        { name: "INSTANCE_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        { name: "SERVICE_ACCOUNT", valueFrom: { fieldRef: { fieldPath: "spec.serviceAccountName" } } },
        { name: "APP", valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: "WHO", value: "$(POD_NAME)@$(INSTANCE_IP) $$(POD_NAME) $(NOPE)" },
      ],
    },
    "10.0.0.3",
    "node",
  );
  assert.deepStrictEqual(env, {
    POD_NAME: "httpbin-1",
    INSTANCE_IP: "10.0.0.3",
    SERVICE_ACCOUNT: "httpbin",
    APP: "httpbin",
    WHO: "httpbin-1@10.0.0.3 $(POD_NAME) $(NOPE)",
  });
  assert.throws(
    () =>
      containerEnvironment(
        p,
        {
          name: "c",
          env: [{ name: "PASSWORD", valueFrom: { secretKeyRef: { name: "s", key: "k" } } as never }],
        },
        "",
        "",
      ),
    /container c: env PASSWORD: valueFrom/,
  );
});
