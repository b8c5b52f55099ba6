import assert from "node:assert/strict";
import type { JsonObject } from "./json.ts";
import { injectionPatch } from "./inject_patch.ts";
import { probeRewrite, shouldRewriteProbes } from "./probe_rewrite.ts";
import { defaultTemplate, parseTemplate } from "./template.ts";
import { applyJsonPatch } from "./json.ts";
import { httpbinPod } from "./test_support.ts";
import { parseAppProbers } from "../app_probers.ts";

const SETTINGS = { nativeSidecars: false, tokenAudience: "mesh-ca", revision: "default" };
const STATUS = { path: "/app-health/app/livez", port: 15020, scheme: "HTTP" };

function podWith(container: JsonObject, annotations?: Record<string, string>): JsonObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "foo", ...(annotations ? { annotations } : {}) },
    spec: { containers: [{ name: "app", image: "a", ...container }] },
  };
}

const HTTP_PORTS = { ports: [{ name: "http", containerPort: 8080 }] };

const CASES: {
  name: string;
  container: JsonObject;
  /** The app container's probes after the patch. */
  probes: JsonObject;
  /** ISTIO_KUBE_APP_PROBERS, or undefined when nothing was rewritten. */
  probers?: JsonObject;
}[] = [
  {
    name: "httpGet with a named port resolves through the container's ports; thresholds kept",
    container: {
      ...HTTP_PORTS,
      livenessProbe: {
        httpGet: { path: "/status/200", port: "http", httpHeaders: [{ name: "X-A", value: "1" }] },
        periodSeconds: 3,
        failureThreshold: 2,
        timeoutSeconds: 2,
      },
    },
    probes: {
      livenessProbe: {
        httpGet: { ...STATUS, httpHeaders: [{ name: "X-A", value: "1" }] },
        periodSeconds: 3,
        failureThreshold: 2,
        timeoutSeconds: 2,
      },
    },
    probers: {
      "/app-health/app/livez": {
        httpGet: { path: "/status/200", port: 8080, httpHeaders: [{ name: "X-A", value: "1" }] },
        timeoutSeconds: 2,
      },
    },
  },
  {
    name: "HTTPS becomes HTTP to the proxy; the proxy keeps HTTPS towards the app",
    container: { readinessProbe: { httpGet: { path: "/ready", port: 8443, scheme: "HTTPS" } } },
    probes: { readinessProbe: { httpGet: { ...STATUS, path: "/app-health/app/readyz" } } },
    probers: { "/app-health/app/readyz": { httpGet: { path: "/ready", port: 8443, scheme: "HTTPS" } } },
  },
  {
    name: "tcpSocket becomes an httpGet (tcpSocket removed)",
    container: { ...HTTP_PORTS, startupProbe: { tcpSocket: { port: "http" }, failureThreshold: 30 } },
    probes: {
      startupProbe: { httpGet: { ...STATUS, path: "/app-health/app/startupz" }, failureThreshold: 30 },
    },
    probers: { "/app-health/app/startupz": { tcpSocket: { port: 8080 } } },
  },
  {
    name: "grpc becomes an httpGet (grpc removed), service kept for the proxy",
    container: { livenessProbe: { grpc: { port: 9090, service: "app.v1" } } },
    probes: { livenessProbe: { httpGet: STATUS } },
    probers: { "/app-health/app/livez": { grpc: { port: 9090, service: "app.v1" } } },
  },
  {
    name: "exec probes are left alone",
    container: { livenessProbe: { exec: { command: ["true"] } } },
    probes: { livenessProbe: { exec: { command: ["true"] } } },
  },
  {
    name: "a named port the container does not declare is left to the kubelet",
    container: { livenessProbe: { httpGet: { path: "/", port: "nope" } } },
    probes: { livenessProbe: { httpGet: { path: "/", port: "nope" } } },
  },
  {
    name: "a probe of another host is left alone (it does not probe this pod)",
    container: { livenessProbe: { tcpSocket: { port: 53, host: "10.0.0.10" } } },
    probes: { livenessProbe: { tcpSocket: { port: 53, host: "10.0.0.10" } } },
  },
];

for (const c of CASES) {
  Deno.test(`probeRewrite: ${c.name}`, () => {
    const pod = podWith(c.container);
    const patched = applyJsonPatch(pod, injectionPatch(pod, defaultTemplate("mesh-system"), SETTINGS));
    const [app, proxy] = (patched.spec as { containers: JsonObject[] }).containers;
    for (const [field, probe] of Object.entries(c.probes)) assert.deepEqual(app[field], probe, field);
    const env = (proxy.env as JsonObject[]).find((e) => e.name === "ISTIO_KUBE_APP_PROBERS");
    if (c.probers === undefined) {
      assert.equal(env, undefined);
      assert.ok(!(proxy.args as string[]).some((a) => a.startsWith("--statusPort")));
      return;
    }
    assert.deepEqual(JSON.parse(env!.value as string), c.probers);
    assert.ok((proxy.args as string[]).includes("--statusPort=15020"));
    // What the injector writes, the proxy accepts.
    parseAppProbers(env!.value as string, "ISTIO_KUBE_APP_PROBERS");
  });
}

Deno.test("probeRewrite: every container gets its own paths; the original pod is not changed", () => {
  const spec = {
    containers: [
      { name: "a", livenessProbe: { httpGet: { path: "/l", port: 1 } } },
      { name: "b", readinessProbe: { tcpSocket: { port: 2 } } },
    ],
  };
  const before = structuredClone(spec);
  const r = probeRewrite(spec, 15020);
  assert.deepEqual(Object.keys(r.probers), ["/app-health/a/livez", "/app-health/b/readyz"]);
  assert.deepEqual(r.ops.map((o) => o.path), [
    "/spec/containers/0/livenessProbe",
    "/spec/containers/1/readinessProbe",
  ]);
  assert.deepEqual(spec, before);
});

Deno.test("probeRewrite: with native sidecars the probers go to the mesh-proxy init container", () => {
  const pod = podWith({ livenessProbe: { httpGet: { path: "/", port: 80 } } });
  const patched = applyJsonPatch(
    pod,
    injectionPatch(pod, defaultTemplate("mesh-system"), { ...SETTINGS, nativeSidecars: true }),
  );
  const spec = patched.spec as { containers: JsonObject[]; initContainers: JsonObject[] };
  assert.deepEqual(spec.containers.map((c) => c.name), ["app"]);
  assert.deepEqual(spec.containers[0].livenessProbe, { httpGet: STATUS });
  const proxy = spec.initContainers.find((c) => c.name === "mesh-proxy")!;
  assert.equal(proxy.restartPolicy, "Always");
  const env = (proxy.env as JsonObject[]).find((e) => e.name === "ISTIO_KUBE_APP_PROBERS");
  assert.deepEqual(JSON.parse(env!.value as string), {
    "/app-health/app/livez": { httpGet: { path: "/", port: 80 } },
  });
});

Deno.test("shouldRewriteProbes: the mesh annotation, then Istio's (Go booleans), then the values' default", () => {
  const table: [Record<string, string> | undefined, boolean, boolean][] = [
    [undefined, true, true],
    [undefined, false, false],
    [{ "sidecar.istio.io/rewriteAppHTTPProbers": "false" }, true, false],
    [{ "sidecar.istio.io/rewriteAppHTTPProbers": "True" }, false, true],
    [
      { "sidecar.mesh.io/rewriteAppHTTPProbers": "0", "sidecar.istio.io/rewriteAppHTTPProbers": "true" },
      true,
      false,
    ],
    // Not a Go boolean: ignored, as Istio's strconv.ParseBool error.
    [{ "sidecar.mesh.io/rewriteAppHTTPProbers": "no" }, true, true],
  ];
  for (const [annotations, byDefault, want] of table) {
    assert.equal(shouldRewriteProbes(annotations, byDefault), want, JSON.stringify([annotations, byDefault]));
  }
});

Deno.test("injectionPatch: rewriteAppHTTPProbers false (annotation or values) leaves the probes as they are", () => {
  const probe = { httpGet: { path: "/", port: 80 } };
  const off = podWith({ livenessProbe: probe }, { "sidecar.istio.io/rewriteAppHTTPProbers": "false" });
  const valuesOff = parseTemplate(
    { values: JSON.stringify({ sidecarInjectorWebhook: { rewriteAppHTTPProbe: false } }) },
    "values",
    "mesh-system",
  );
  for (
    const [pod, t] of [[off, defaultTemplate("mesh-system")], [
      podWith({ livenessProbe: probe }),
      valuesOff,
    ]] as const
  ) {
    const patched = applyJsonPatch(pod, injectionPatch(pod, t, SETTINGS));
    const [app, proxy] = (patched.spec as { containers: JsonObject[] }).containers;
    assert.deepEqual(app.livenessProbe, probe);
    assert.ok(!(proxy.env as JsonObject[]).some((e) => e.name === "ISTIO_KUBE_APP_PROBERS"));
  }
  assert.throws(
    () =>
      parseTemplate(
        { values: JSON.stringify({ sidecarInjectorWebhook: { rewriteAppHTTPProbe: "no" } }) },
        "values",
        "mesh-system",
      ),
    /values: sidecarInjectorWebhook\.rewriteAppHTTPProbe: must be true or false/,
  );
});

Deno.test("injectionPatch: Istio's httpbin sample (no probes) is unchanged by the rewrite", () => {
  const pod = httpbinPod();
  const patched = applyJsonPatch(pod, injectionPatch(pod, defaultTemplate("mesh-system"), SETTINGS));
  const proxy = (patched.spec as { containers: JsonObject[] }).containers[1];
  assert.ok(!(proxy.env as JsonObject[]).some((e) => e.name === "ISTIO_KUBE_APP_PROBERS"));
});
