import assert from "node:assert/strict";
import { meshConfigYaml } from "./mesh_config.ts";
import { labNames } from "../../shared/internal/lab/naming.ts";
import { hostsFile, ip6tablesRules, iptablesRules, planLab } from "../../shared/internal/lab/plan.ts";
import { parseTopology } from "../../shared/internal/lab/topology.ts";
import { validateText } from "../../shared/mod.ts";

const quickstart = new URL("./quickstart.yaml", import.meta.url).pathname;
const plan = planLab(
  labNames("qs", "10.250.0.0/24"),
  parseTopology(Deno.readTextFileSync(quickstart), quickstart),
);

Deno.test("planLab: addresses in topology order, a VIP per service, veths v1.. (v0 is meshd's)", () => {
  assert.deepEqual(plan.meshd, { netns: "qs_meshd", address: "10.250.0.2", hubLink: "v0" });
  assert.deepEqual(
    plan.workloads.map((w) => [w.netns, w.address, w.hubLink]),
    [
      ["qs_foo_httpbin", "10.250.0.3", "v1"],
      ["qs_foo_sleep", "10.250.0.4", "v2"],
      ["qs_bar_httpbin", "10.250.0.5", "v3"],
      ["qs_bar_sleep", "10.250.0.6", "v4"],
      ["qs_legacy_httpbin", "10.250.0.7", "v5"],
      ["qs_legacy_sleep", "10.250.0.8", "v6"],
    ],
  );
  assert.deepEqual(plan.services.map((s) => `${s.name}.${s.namespace}=${s.vip}->${s.address}`), [
    "httpbin.foo=10.250.0.128->10.250.0.3",
    "httpbin.bar=10.250.0.129->10.250.0.5",
    "httpbin.legacy=10.250.0.130->10.250.0.7",
  ]);
});

Deno.test("hostsFile: Kubernetes service names, short names in the own namespace only, meshd", () => {
  const foo = hostsFile(plan, { namespace: "foo", name: "sleep", address: "10.250.0.4" });
  assert.match(foo, /^10\.250\.0\.4\tsleep$/m);
  assert.match(foo, /^10\.250\.0\.2\tmeshd\.mesh-system\.svc /m);
  assert.match(
    foo,
    /^10\.250\.0\.128\thttpbin httpbin\.foo httpbin\.foo\.svc httpbin\.foo\.svc\.cluster\.local$/m,
  );
  assert.match(foo, /^10\.250\.0\.129\thttpbin\.bar httpbin\.bar\.svc httpbin\.bar\.svc\.cluster\.local$/m);
});

Deno.test("iptablesRules: every outbound TCP REDIRECTed with a sidecar but the proxy's uid/gid and loopback; DNAT to the target port without", () => {
  assert.deepEqual(iptablesRules(plan, true).map((r) => r.join(" ")), [
    "-w -t nat -A OUTPUT -p tcp -m owner --uid-owner 1337 -j RETURN",
    "-w -t nat -A OUTPUT -p tcp -m owner --gid-owner 1337 -j RETURN",
    "-w -t nat -A OUTPUT -p tcp -o lo -j RETURN",
    "-w -t nat -A OUTPUT -p tcp -d 127.0.0.0/8 -j RETURN",
    "-w -t nat -A OUTPUT -p tcp -j REDIRECT --to-ports 15001",
  ]);
  // IPv6 mirrors it (istio-iptables' ip6tables rules), with ::1/128 for 127.0.0.0/8.
  assert.deepEqual(ip6tablesRules(true).map((r) => r.join(" ")), [
    "-w -t nat -A OUTPUT -p tcp -m owner --uid-owner 1337 -j RETURN",
    "-w -t nat -A OUTPUT -p tcp -m owner --gid-owner 1337 -j RETURN",
    "-w -t nat -A OUTPUT -p tcp -o lo -j RETURN",
    "-w -t nat -A OUTPUT -p tcp -d ::1/128 -j RETURN",
    "-w -t nat -A OUTPUT -p tcp -j REDIRECT --to-ports 15001",
  ]);
  assert.deepEqual(ip6tablesRules(false), []);
  const dnat = iptablesRules(plan, false);
  assert.equal(dnat.length, 3);
  assert.deepEqual(dnat[0].slice(7), [
    "-d",
    "10.250.0.128/32",
    "--dport",
    "8000",
    "-j",
    "DNAT",
    "--to-destination",
    "10.250.0.3:8080",
  ]);
});

Deno.test("meshConfigYaml: valid mesh config; WorkloadGroup with a sidecar, WorkloadEntry without", () => {
  const result = validateText(meshConfigYaml(plan), "lab-generated.yaml");
  assert.deepEqual(result.issues.filter((i) => i.severity === "error"), []);
  const kinds = result.resources.map((r) =>
    `${r.resource.kind} ${r.resource.metadata.namespace}/${r.resource.metadata.name}`
  );
  assert.deepEqual(kinds, [
    "ServiceEntry foo/httpbin",
    "ServiceEntry bar/httpbin",
    "ServiceEntry legacy/httpbin",
    "WorkloadGroup foo/httpbin",
    "WorkloadGroup foo/sleep",
    "WorkloadGroup bar/httpbin",
    "WorkloadGroup bar/sleep",
    "WorkloadEntry legacy/httpbin",
    "WorkloadEntry legacy/sleep",
  ]);
  const se = result.resources[0].resource.spec as Record<string, unknown>;
  assert.deepEqual(se.addresses, ["10.250.0.128"]);
  assert.deepEqual(se.ports, [{ name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" }]);
  assert.deepEqual(se.workloadSelector, { labels: { app: "httpbin", version: "v1" } });
  const we = result.resources[7].resource.spec as Record<string, unknown>;
  assert.equal(we.address, "10.250.0.7");
});

Deno.test("a gateway workload: a VIP for its service, a WorkloadGroup (its proxy auto-registers), DNAT rules", () => {
  const topology = parseTopology(
    Deno.readTextFileSync(quickstart) + `  - name: istio-ingressgateway
    namespace: legacy
    serviceAccount: istio-ingressgateway-service-account
    labels: {istio: ingressgateway}
    gateway: true
    containerPorts: [8080]
    services: [{name: istio-ingressgateway, ports: [{name: http2, port: 80, targetPort: 8080}]}]
`,
    quickstart,
  );
  const p = planLab(labNames("gw", "10.250.0.0/24"), topology);
  const gw = p.services.find((s) => s.name === "istio-ingressgateway")!;
  assert.deepEqual([gw.vip, gw.address], ["10.250.0.131", "10.250.0.9"]);
  assert.match(hostsFile(p), /^10\.250\.0\.131\tistio-ingressgateway\.legacy /m);
  assert.deepEqual(
    iptablesRules(p, false).find((r) => r.includes("10.250.0.131/32"))?.slice(-6),
    ["--dport", "80", "-j", "DNAT", "--to-destination", "10.250.0.9:8080"],
  );
  const result = validateText(meshConfigYaml(p), "lab-generated.yaml");
  assert.deepEqual(result.issues.filter((i) => i.severity === "error"), []);
  const group = result.resources.find((r) =>
    r.resource.metadata.name === "istio-ingressgateway" &&
    r.resource.kind !== "ServiceEntry"
  )!;
  assert.equal(group.resource.kind, "WorkloadGroup");
  assert.deepEqual(group.resource.spec, {
    metadata: { labels: { istio: "ingressgateway" } },
    template: { serviceAccount: "istio-ingressgateway-service-account" },
  });
});

Deno.test("meshConfigYaml: each port's protocol as shared/protocol selects it (appProtocol, name, auto)", () => {
  const topology = `
namespaces: [{ name: foo, injection: enabled }]
workloads:
  - name: tcp-echo
    namespace: foo
    command: [/bin/true]
    containerPorts: [9000, 9001, 9002, 9003]
    services:
      - name: tcp-echo
        ports:
          - { name: tcp, port: 9000 }
          - { name: echo, port: 9001, appProtocol: tcp }
          - { name: web, port: 9002 }
          - { name: http, port: 9003, appProtocol: kubernetes.io/h2c }
`;
  const p = planLab(labNames("pt", "10.229.0.0/24"), parseTopology(topology, "t.yaml"));
  const result = validateText(meshConfigYaml(p), "lab-generated.yaml");
  assert.deepEqual(result.issues.filter((i) => i.severity === "error"), []);
  const se = result.resources[0].resource.spec as { ports: { name: string; protocol?: string }[] };
  assert.deepEqual(se.ports.map((x) => [x.name, x.protocol ?? "(auto-detect)"]), [
    ["tcp", "TCP"],
    ["echo", "TCP"],
    ["web", "(auto-detect)"],
    ["http", "HTTP2"],
  ]);
  assert.throws(
    () => parseTopology(topology.replace("appProtocol: tcp", "appProtocol: 7"), "t.yaml"),
    /appProtocol: must be a non-empty string/,
  );
});
