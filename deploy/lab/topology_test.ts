import assert from "node:assert/strict";
import { InputError } from "../../shared/internal/lab/input_error.ts";
import { parseTopology } from "../../shared/internal/lab/topology.ts";

const GOOD = `namespaces:
  - {name: foo, injection: enabled}
  - {name: legacy, injection: disabled}
workloads:
  - name: httpbin
    namespace: foo
    serviceAccount: httpbin
    command: [gunicorn, -b, "$(BIND_IP):8080", httpbin:app]
    containerPorts: [8080, 9000]
    services: [{name: httpbin, ports: [{name: http, port: 8000, targetPort: 8080}]}]
  - {name: sleep, namespace: legacy, command: [sleep, infinity]}
`;

Deno.test("parseTopology: a good file, with defaults (labels app=<name>, serviceAccount default, targetPort)", () => {
  const t = parseTopology(GOOD, "t.yaml");
  assert.deepEqual(t.namespaces, [{ name: "foo", injection: true }, { name: "legacy", injection: false }]);
  assert.deepEqual(t.workloads[0], {
    name: "httpbin",
    namespace: "foo",
    serviceAccount: "httpbin",
    labels: { app: "httpbin" },
    command: ["gunicorn", "-b", "$(BIND_IP):8080", "httpbin:app"],
    containerPorts: [8080, 9000],
    services: [{ name: "httpbin", ports: [{ name: "http", port: 8000, targetPort: 8080 }] }],
    sidecar: true,
    gateway: false,
  });
  assert.equal(t.workloads[1].serviceAccount, "default");
  assert.deepEqual(t.workloads[1].labels, { app: "sleep" });
  assert.equal(t.workloads[1].sidecar, false);
  const p = parseTopology(
    GOOD.replace("{name: http, port: 8000, targetPort: 8080}", "{port: 8080}"),
    "t.yaml",
  );
  assert.deepEqual(p.workloads[0].services[0].ports, [{ name: "http-8080", port: 8080, targetPort: 8080 }]);
});

const GATEWAY = `  - name: istio-ingressgateway
    namespace: foo
    labels: {istio: ingressgateway}
    gateway: true
    containerPorts: [8080]
    services: [{name: istio-ingressgateway, ports: [{name: http2, port: 80, targetPort: 8080}]}]
`;

Deno.test("parseTopology: a gateway runs no command and has no sidecar, even in an injected namespace", () => {
  const g = parseTopology(GOOD + GATEWAY, "t.yaml").workloads[2];
  assert.deepEqual(g, {
    name: "istio-ingressgateway",
    namespace: "foo",
    serviceAccount: "default",
    labels: { istio: "ingressgateway" },
    command: [],
    containerPorts: [8080],
    services: [{ name: "istio-ingressgateway", ports: [{ name: "http2", port: 80, targetPort: 8080 }] }],
    sidecar: false,
    gateway: true,
  });
});

const BAD: [string, string, string[]][] = [
  [
    "a gateway with a command, its admin port, a non-boolean gateway field",
    GOOD + GATEWAY.replace("gateway: true", "gateway: true\n    command: [sleep]").replace(
      "[8080]",
      "[8080, 15000]",
    ) + "  - {name: other, namespace: legacy, gateway: yes, command: [sleep]}\n",
    [
      "t.yaml:16: workloads[2].command: a gateway runs the mesh's proxy (--type router); remove the command",
      "t.yaml:17: workloads[2].containerPorts[1]: port 15000 is the gateway proxy's own (15000)",
      't.yaml:19: workloads[3].gateway: must be true or false; got "yes"',
    ],
  ],
  ["not YAML", "namespaces: [", ["t.yaml:1: invalid YAML"]],
  ["two documents", "namespaces: []\n---\nworkloads: []\n", [
    "t.yaml: must hold exactly one YAML document; found 2",
  ]],
  ["unknown top field", "namespaces: []\nworkloads: []\npods: []\n", ["t.yaml:3: pods: unknown field"]],
  [
    "bad injection and undeclared namespace",
    "namespaces: [{name: foo, injection: yes}]\nworkloads: [{name: a, namespace: bar, command: [x]}]\n",
    [
      't.yaml:1: namespaces[0].injection: must be enabled or disabled; got "yes"',
      "t.yaml:2: workloads[0].namespace: namespace bar is not listed under namespaces",
    ],
  ],
  [
    "root namespace",
    "namespaces: [{name: mesh-system, injection: enabled}]\nworkloads: []\n",
    ["t.yaml:1: namespaces[0].name: mesh-system is the root namespace"],
  ],
  [
    "targetPort not a container port; port out of range; sidecar port",
    GOOD.replace("targetPort: 8080", "targetPort: 8081").replace("[8080, 9000]", "[8080, 70000, 15001]"),
    [
      "t.yaml:9: workloads[0].containerPorts[1]: must be a port number from 1 to 65535; got 70000",
      "t.yaml:9: workloads[0].containerPorts[2]: port 15001 is the sidecar's own (15000, 15001)",
      "t.yaml:10: workloads[0].services[0].ports[0].targetPort: targets port 8081, which is not among the workload's containerPorts",
    ],
  ],
  [
    "duplicate workload and bad name",
    GOOD +
    "  - {name: sleep, namespace: legacy, command: [sleep]}\n  - {name: Web, namespace: legacy, command: []}\n",
    [
      "t.yaml:12: workloads[2].name: workload legacy/sleep is listed twice",
      't.yaml:13: workloads[3].name: must be a DNS label (lower-case letters, digits, "-"); got "Web"',
      "t.yaml:13: workloads[3].command: must name a program",
    ],
  ],
  [
    "labels",
    GOOD.replace("serviceAccount: httpbin", "serviceAccount: httpbin\n    labels: {app: [x]}"),
    ['t.yaml:8: workloads[0].labels.app: must be a label value (a string); got ["x"]'],
  ],
];

for (const [what, text, want] of BAD) {
  Deno.test(`parseTopology rejects: ${what}`, () => {
    let problems: string[] = [];
    try {
      parseTopology(text, "t.yaml");
      assert.fail("accepted");
    } catch (e) {
      assert.ok(e instanceof InputError, String(e));
      problems = e.problems;
    }
    assert.equal(problems.length, want.length, problems.join("\n"));
    want.forEach((w, i) =>
      assert.ok(problems[i].startsWith(w), `${problems[i]}\n  does not start with\n${w}`)
    );
  });
}

Deno.test("parseTopology: the quickstart topology is valid", async () => {
  const file = new URL("./quickstart.yaml", import.meta.url).pathname;
  const t = parseTopology(await Deno.readTextFile(file), file);
  assert.deepEqual(t.workloads.map((w) => `${w.namespace}/${w.name}:${w.sidecar}`), [
    "foo/httpbin:true",
    "foo/sleep:true",
    "bar/httpbin:true",
    "bar/sleep:true",
    "legacy/httpbin:false",
    "legacy/sleep:false",
  ]);
});

Deno.test("meshConfig: any map, passed to meshd as written; anything else is a problem", () => {
  const base = "namespaces: [{name: foo, injection: enabled}]\nworkloads: []\n";
  const t = parseTopology(base + "meshConfig: {denialExplanation: {ipBlocks: [127.0.0.1]}}\n", "t.yaml");
  assert.deepEqual(t.meshConfig, { denialExplanation: { ipBlocks: ["127.0.0.1"] } });
  assert.equal(parseTopology(base, "t.yaml").meshConfig, undefined);
  assert.throws(
    () => parseTopology(base + "meshConfig: [a]\n", "t.yaml"),
    /t\.yaml:3: meshConfig: must be a map/,
  );
});
