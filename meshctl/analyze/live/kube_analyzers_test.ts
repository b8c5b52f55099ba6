import assert from "node:assert/strict";
import { runAnalysis } from "../command.ts";
import { inputFromObjects } from "./cluster_input.ts";
import { inputFromFiles } from "../input.ts";
import {
  type ClusterObjects,
  type KubePod,
  type KubeService,
  podBoundPorts,
  toPod,
  toService,
} from "./kube_objects.ts";

const ns = (name: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}) => ({
  name,
  labels,
  annotations,
});

function pod(name: string, over: Record<string, unknown> = {}): KubePod {
  return toPod({
    metadata: { name, namespace: "foo", labels: { app: name }, ...over.metadata as object },
    spec: {
      containers: [{ name: "app", ports: [{ name: "http", containerPort: 8080 }] }],
      ...over.spec as object,
    },
  });
}

function svc(
  name: string,
  spec: Record<string, unknown>,
  metadata: Record<string, unknown> = {},
): KubeService {
  return toService({ metadata: { name, namespace: "foo", ...metadata }, spec });
}

const INJECTED = ns("foo", { "mesh-injection": "enabled" });
const PROXIED = pod("httpbin", {
  spec: {
    containers: [{ name: "app", ports: [{ name: "http", containerPort: 8080 }] }, { name: "mesh-proxy" }],
  },
});
const HTTP_SVC = svc("httpbin", {
  selector: { app: "httpbin" },
  ports: [{ name: "http", port: 8000, targetPort: 8080 }],
});

/** The codes (with origin) for a cluster plus mesh resources in YAML. */
async function codes(cluster: Partial<ClusterObjects>, yaml = ""): Promise<string[]> {
  const objects: ClusterObjects = { namespaces: [INJECTED], pods: [], services: [], ...cluster };
  let resources: Awaited<ReturnType<typeof inputFromFiles>>["resources"] = [];
  if (yaml) {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/c.yaml`, yaml);
      resources = (await inputFromFiles([dir], { rootNamespace: "mesh-system" })).resources;
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
  const input = inputFromObjects(objects, resources, {
    rootNamespace: "mesh-system",
    issues: [],
    target: "test",
  });
  return runAnalysis(input).map((m) =>
    `${m.type.code} ${m.resource ? `${m.resource.kind} ${m.resource.namespace}/${m.resource.name}` : "-"}`
  ).sort();
}

const pa = (spec: string) =>
  `apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: pa, namespace: foo}\nspec: ${spec}\n`;
const gw = (spec: string) =>
  `apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: foo}\nspec: ${spec}\n`;

const CASES: { name: string; cluster: Partial<ClusterObjects>; yaml?: string; want: string[] }[] = [
  {
    name: "an injected namespace with a proxied pod behind a named service: nothing",
    cluster: { pods: [PROXIED], services: [HTTP_SVC] },
    want: [],
  },
  {
    name: "IST0102: a namespace without injection or revision label",
    cluster: {
      namespaces: [
        INJECTED,
        ns("bar"),
        ns("kube-system"),
        ns("mesh-system"),
        ns("baz", { "mesh.io/rev": "canary" }),
      ],
    },
    want: ["IST0102 Namespace /bar"],
  },
  {
    name: "IST0102: an explicit mesh-injection=disabled says enough",
    cluster: { namespaces: [INJECTED, ns("bar", { "istio-injection": "disabled" })] },
    want: [],
  },
  {
    name: "IST0103: a pod of an injected namespace without the proxy",
    cluster: { pods: [pod("httpbin")] },
    want: ["IST0103 Pod foo/httpbin"],
  },
  {
    name: "IST0103: a pod that opts out is not missing anything",
    cluster: { pods: [pod("httpbin", { metadata: { labels: { "sidecar.mesh.io/inject": "false" } } })] },
    want: [],
  },
  {
    name: "IST0103: a native sidecar (init container mesh-proxy) counts as the proxy",
    cluster: {
      pods: [
        pod("httpbin", { spec: { initContainers: [{ name: "mesh-proxy" }], containers: [{ name: "app" }] } }),
      ],
    },
    want: [],
  },
  {
    name: "IST0103: not in a namespace that asks for nothing",
    cluster: { namespaces: [ns("foo", { "mesh-injection": "disabled" })], pods: [pod("httpbin")] },
    want: [],
  },
  {
    name: "IST0107: an inject annotation on a Service",
    cluster: {
      pods: [PROXIED],
      services: [svc("httpbin", HTTP_SVC_SPEC(), { annotations: { "sidecar.istio.io/inject": "false" } })],
    },
    want: ["IST0107 Service foo/httpbin"],
  },
  {
    name: "IST0107: exportTo on a Pod",
    cluster: {
      pods: [
        pod("httpbin", {
          metadata: { annotations: { "networking.istio.io/exportTo": "." } },
          spec: PROXIED_SPEC(),
        }),
      ],
    },
    want: ["IST0107 Pod foo/httpbin"],
  },
  {
    name: "IST0108: an unknown annotation in the istio.io domain; other domains are not ours",
    cluster: {
      namespaces: [
        ns("foo", { "mesh-injection": "enabled" }, {
          "sidecar.istio.io/injekt": "true",
          "example.com/x": "y",
        }),
      ],
    },
    want: ["IST0108 Namespace /foo"],
  },
  {
    name: "IST0118: a service port named without a protocol",
    cluster: {
      pods: [PROXIED],
      services: [
        svc("httpbin", {
          selector: { app: "httpbin" },
          ports: [{ name: "web", port: 80 }, { name: "grpc-x", port: 90 }, { port: 91, appProtocol: "http" }],
        }),
      ],
    },
    want: ["IST0118 Service foo/httpbin"],
  },
  {
    name: "MESH0001: portLevelMtls on a pod port that no Service targets",
    cluster: { pods: [PROXIED], services: [HTTP_SVC] },
    yaml: pa(
      "{selector: {matchLabels: {app: httpbin}}, mtls: {mode: STRICT}, portLevelMtls: {'9090': {mode: DISABLE}}}",
    ),
    want: ["MESH0001 PeerAuthentication foo/pa"],
  },
  {
    name: "MESH0001: portLevelMtls on the port a Service targets by name: nothing",
    cluster: {
      pods: [PROXIED],
      services: [
        svc("httpbin", {
          selector: { app: "httpbin" },
          ports: [{ name: "http", port: 8000, targetPort: "http" }],
        }),
      ],
    },
    yaml: pa(
      "{selector: {matchLabels: {app: httpbin}}, mtls: {mode: STRICT}, portLevelMtls: {'8080': {mode: DISABLE}}}",
    ),
    want: [],
  },
  {
    name: "MESH0001: a pod with no Service at all binds no port",
    cluster: { pods: [PROXIED] },
    yaml: pa(
      "{selector: {matchLabels: {app: httpbin}}, mtls: {mode: STRICT}, portLevelMtls: {'8080': {mode: DISABLE}}}",
    ),
    want: ["MESH0001 PeerAuthentication foo/pa"],
  },
  {
    name: "IST0127: a policy selecting no pod; pods count as workloads",
    cluster: { pods: [PROXIED], services: [HTTP_SVC] },
    yaml: pa("{selector: {matchLabels: {app: nope}}, mtls: {mode: STRICT}}") +
      "---\n" +
      pa("{selector: {matchLabels: {app: httpbin}}, mtls: {mode: STRICT}}").replace("name: pa", "name: ok"),
    want: ["IST0127 PeerAuthentication foo/pa"],
  },
  {
    name: "IST0116: two Services target one pod port with different protocols",
    cluster: {
      pods: [PROXIED],
      services: [
        HTTP_SVC,
        svc("httpbin-tcp", {
          selector: { app: "httpbin" },
          ports: [{ name: "tcp", port: 9000, targetPort: 8080 }],
        }),
      ],
    },
    want: ["IST0116 Pod foo/httpbin"],
  },
  {
    name: "IST0116: two Services with the same protocol on one port are fine",
    cluster: {
      pods: [PROXIED],
      services: [
        HTTP_SVC,
        svc("httpbin-2", {
          selector: { app: "httpbin" },
          ports: [{ name: "http-alt", port: 9000, targetPort: 8080 }],
        }),
      ],
    },
    want: [],
  },
  {
    name: "IST0101: a Gateway whose selector matches no pod",
    cluster: { pods: [PROXIED], services: [HTTP_SVC] },
    yaml: gw(
      "{selector: {istio: ingressgateway}, servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*']}]}",
    ),
    want: ["IST0101 Gateway foo/gw"],
  },
  {
    name: "IST0104: a Gateway server port neither a container port nor a service port of its pods",
    cluster: { pods: [PROXIED], services: [HTTP_SVC] },
    yaml: gw(
      "{selector: {app: httpbin}, servers: [{port: {number: 8000, name: http, protocol: HTTP}, hosts: ['*']}, {port: {number: 443, name: https, protocol: HTTP}, hosts: ['*']}]}",
    ),
    want: ["IST0104 Gateway foo/gw"],
  },
];

function HTTP_SVC_SPEC(): Record<string, unknown> {
  return { selector: { app: "httpbin" }, ports: [{ name: "http", port: 8000, targetPort: 8080 }] };
}

function PROXIED_SPEC(): Record<string, unknown> {
  return { containers: [{ name: "app" }, { name: "mesh-proxy" }] };
}

for (const c of CASES) {
  Deno.test(`kube analyzers: ${c.name}`, async () => {
    assert.deepEqual(await codes(c.cluster, c.yaml), [...c.want].sort());
  });
}

Deno.test("kube analyzers: say nothing without a cluster (files and meshd's config)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/c.yaml`,
      gw(
        "{selector: {app: none}, servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*']}]}",
      ),
    );
    const input = await inputFromFiles([dir], { rootNamespace: "mesh-system" });
    assert.deepEqual(
      runAnalysis(input, { analyzers: ["gateway.IngressGatewayPortAnalyzer", "injection.Analyzer"] }),
      [],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("podBoundPorts: number, name and absent targetPorts; a name no container has binds nothing", () => {
  const p = pod("httpbin");
  const bound = podBoundPorts(p, [
    svc("a", {
      selector: { app: "httpbin" },
      ports: [{ name: "http", port: 80, targetPort: "http" }, { name: "tcp-x", port: 81 }, {
        port: 82,
        targetPort: "nope",
      }],
    }),
    svc("other", { selector: { app: "other" }, ports: [{ port: 83 }] }),
    svc("manual", { ports: [{ port: 84 }] }),
  ]);
  assert.deepEqual(
    bound.map((b) => [b.service, b.servicePort.number, b.containerPort, b.servicePort.protocol]),
    [
      ["foo/a", 80, 8080, "HTTP"],
      ["foo/a", 81, 81, "TCP"],
    ],
  );
});
