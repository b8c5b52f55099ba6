import assert from "node:assert/strict";
import type { V1EndpointSlice, V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import { buildPushContext, type ConfigResource } from "../push_context/push_context.ts";
import { configResource } from "../push_context/test_support.ts";
import { type ConvertCounts, podWorkloads, registryServices } from "./convert.ts";

const OPTIONS = { clusterID: "east", domain: "cluster.local" };

function pod(name: string, ip: string | undefined, extra: Partial<V1Pod["spec"]> = {}, labels = {}): V1Pod {
  return {
    metadata: { name, namespace: "foo", labels: { app: "httpbin", ...labels } },
    spec: {
      serviceAccountName: "httpbin",
      containers: [{ name: "app", ports: [{ name: "http-web", containerPort: 8080 }] }],
      ...extra,
    },
    status: ip ? { podIP: ip, phase: "Running" } : { phase: "Pending" },
  };
}

const SERVICE: V1Service = {
  metadata: { name: "httpbin", namespace: "foo" },
  spec: {
    clusterIP: "10.96.0.10",
    ports: [
      { name: "http", port: 80, targetPort: "http-web" as unknown as never },
      { name: "grpc-api", port: 9000, targetPort: 9090 as unknown as never },
    ],
  },
};

function slice(endpoints: V1EndpointSlice["endpoints"], ports?: V1EndpointSlice["ports"]): V1EndpointSlice {
  return {
    metadata: { name: "httpbin-abc", namespace: "foo", labels: { "kubernetes.io/service-name": "httpbin" } },
    addressType: "IPv4",
    endpoints,
    ...(ports ? { ports } : {}),
  };
}

const ref = (name: string) => ({ kind: "Pod", name, namespace: "foo" });

/** Converts and builds the push context, as the discovery server does. */
function build(
  pods: V1Pod[],
  slices: V1EndpointSlice[],
  service: V1Service = SERVICE,
  namespaces: V1Namespace[] = [],
  config: ConfigResource[] = [],
) {
  const counts: ConvertCounts = { noIp: 0, pending: [], noPod: 0 };
  const nsMap = new Map(namespaces.map((n) => [n.metadata!.name!, n]));
  const workloads = podWorkloads(pods, nsMap, OPTIONS, counts);
  const byKey = new Map(pods.map((p) => [`foo/${p.metadata!.name}`, p]));
  const services = registryServices([service], slices, byKey, workloads, OPTIONS, counts);
  const ctx = buildPushContext(config, {
    version: "1",
    registry: {
      workloads: [...workloads.values()],
      services,
      debug: { registry: "Kubernetes", clusterID: "east" },
    },
  });
  return { ctx, counts, service: ctx.services.find((s) => s.key === "foo/httpbin")! };
}

Deno.test("registry: a ready endpoint of a sidecar pod carries the pod's identity; the pod is a proxied workload", () => {
  const { ctx, service } = build(
    [pod("httpbin-1", "10.1.0.5", {}, { "security.istio.io/tlsMode": "istio" })],
    [slice([{ addresses: ["10.1.0.5"], conditions: { ready: true }, targetRef: ref("httpbin-1") }])],
  );
  assert.deepEqual(service.hosts, ["httpbin.foo.svc.cluster.local"]);
  assert.deepEqual(service.addresses, ["10.96.0.10"]);
  assert.deepEqual(service.ports, [
    { name: "http", number: 80, targetPort: 8080, protocol: "HTTP" },
    { name: "grpc-api", number: 9000, targetPort: 9090, protocol: "GRPC" },
  ]);
  assert.deepEqual(service.endpoints.map((e) => ({ ...e, labels: undefined })), [{
    workload: "foo/httpbin-1",
    address: "10.1.0.5",
    ports: { 80: 8080, 9000: 9090 },
    proxied: true,
    identity: "spiffe://cluster.local/ns/foo/sa/httpbin",
    labels: undefined,
    mtlsDisabledPorts: [],
  }]);
  const w = ctx.workloads.get("foo/httpbin-1")!;
  assert.equal(w.labels["topology.istio.io/cluster"], "east");
  assert.equal(w.identity, "spiffe://cluster.local/ns/foo/sa/httpbin");
  assert.deepEqual(w.addresses, ["10.1.0.5"]);
  assert.deepEqual(w.inboundMtls.map((m) => m.port), [8080, 9090], "the targeted ports are bound");
});

Deno.test("registry: the injected proxy container makes a pod proxied without the label; without it, plain", () => {
  const sidecar = build(
    [pod("httpbin-1", "10.1.0.5", { containers: [{ name: "app" }, { name: "mesh-proxy" }] })],
    [slice([{ addresses: ["10.1.0.5"], targetRef: ref("httpbin-1") }])],
  );
  assert.equal(sidecar.service.endpoints[0].proxied, true);
  const native = build(
    [pod("httpbin-1", "10.1.0.5", { initContainers: [{ name: "istio-proxy", restartPolicy: "Always" }] })],
    [slice([{ addresses: ["10.1.0.5"], targetRef: ref("httpbin-1") }])],
  );
  assert.equal(native.service.endpoints[0].proxied, true);
  const plain = build([pod("httpbin-1", "10.1.0.5")], [
    slice([{ addresses: ["10.1.0.5"], targetRef: ref("httpbin-1") }]),
  ]);
  assert.equal(plain.service.endpoints[0].proxied, false);
  assert.equal(plain.service.endpoints[0].identity, "", "no identity to verify for a plain-text endpoint");
});

Deno.test("registry: not-ready endpoints are left out unless the Service publishes them", () => {
  const pods = [pod("a", "10.1.0.5"), pod("b", "10.1.0.6")];
  const slices = [slice([
    { addresses: ["10.1.0.5"], conditions: { ready: true }, targetRef: ref("a") },
    {
      addresses: ["10.1.0.6"],
      conditions: { ready: false, serving: true, terminating: true },
      targetRef: ref("b"),
    },
  ])];
  assert.deepEqual(build(pods, slices).service.endpoints.map((e) => e.address), ["10.1.0.5"]);
  const publish = { ...SERVICE, spec: { ...SERVICE.spec, publishNotReadyAddresses: true } };
  assert.deepEqual(build(pods, slices, publish).service.endpoints.map((e) => e.address), [
    "10.1.0.5",
    "10.1.0.6",
  ]);
});

Deno.test("registry: an endpoint of an unknown pod is pending; one without targetRef joins by IP, else has no pod", () => {
  const { service, counts } = build(
    [pod("a", "10.1.0.5"), pod("nip", undefined)],
    [slice([
      { addresses: ["10.1.0.9"], targetRef: ref("gone") },
      { addresses: ["10.1.0.5"] },
      { addresses: ["10.1.0.7"] },
    ])],
  );
  assert.deepEqual(service.endpoints.map((e) => [e.address, e.workload]), [["10.1.0.5", "foo/a"], [
    "10.1.0.7",
    "",
  ]]);
  assert.deepEqual(counts, { noIp: 1, pending: ["foo/httpbin/10.1.0.9"], noPod: 2 });
});

Deno.test("registry: slice ports by name win; without slice ports a named targetPort is the pod's container port", () => {
  const pods = [pod("a", "10.1.0.5")];
  const named = build(pods, [slice([{ addresses: ["10.1.0.5"], targetRef: ref("a") }])]);
  assert.deepEqual(named.service.endpoints[0].ports, { 80: 8080, 9000: 9090 });
  const fromSlice = build(pods, [
    slice([{ addresses: ["10.1.0.5"], targetRef: ref("a") }], [{ name: "http", port: 8081 }]),
  ]);
  assert.deepEqual(
    fromSlice.service.endpoints[0].ports,
    { 80: 8081 },
    "a slice that lists ports serves those",
  );
});

Deno.test("registry: the network is the pod's label, else its namespace's; terminal pods are no workloads", () => {
  const ns: V1Namespace = { metadata: { name: "foo", labels: { "topology.istio.io/network": "net-ns" } } };
  const done = pod("done", "10.1.0.8");
  done.status!.phase = "Succeeded";
  const { ctx } = build(
    [pod("a", "10.1.0.5"), pod("b", "10.1.0.6", {}, { "topology.istio.io/network": "net-pod" }), done],
    [],
    SERVICE,
    [ns],
  );
  assert.equal(ctx.workloads.get("foo/a")!.network, "net-ns");
  assert.equal(ctx.workloads.get("foo/b")!.network, "net-pod");
  assert.equal(ctx.workloads.has("foo/done"), false);
});

Deno.test("registry: ports' protocols from shared/protocol; an HTTP-only ALLOW rule on the TCP port is warned", () => {
  const tcpEcho: V1Service = {
    metadata: { name: "httpbin", namespace: "foo" },
    spec: {
      clusterIP: "10.96.0.11",
      ports: [
        { name: "tcp-echo", port: 9000 },
        { name: "echo", port: 9001, appProtocol: "kubernetes.io/h2c" },
        { name: "web", port: 9002 },
        { name: "http", port: 9003, appProtocol: "tcp" },
      ],
    },
  };
  const policy = configResource("AuthorizationPolicy", "foo", "allow-get", {
    selector: { matchLabels: { app: "httpbin" } },
    rules: [{ to: [{ operation: { methods: ["GET"] } }] }],
  });
  const { ctx, service } = build(
    [pod("httpbin-1", "10.1.0.5")],
    [slice([{ addresses: ["10.1.0.5"], conditions: { ready: true }, targetRef: ref("httpbin-1") }])],
    tcpEcho,
    [],
    [policy],
  );
  assert.deepEqual(service.ports.map((p) => `${p.name}=${p.protocol}`), [
    "tcp-echo=TCP",
    "echo=HTTP2",
    "web=UNKNOWN",
    "http=TCP",
  ]);
  assert.equal(ctx.authorizationWarnings.length, 1);
  assert.match(
    ctx.authorizationWarnings[0],
    /foo\/allow-get \(ALLOW\) spec\.rules\[0\].* applies to workload foo\/httpbin-1 ports 9000 \(TCP\), 9002 \(UNKNOWN\), 9003 \(TCP\): the rule is dropped/,
  );
});
