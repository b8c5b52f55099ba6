/**
 * Istio's app prober rewrite (istio/istio pkg/kube/inject/app_probe.go; Istio docs "Health Checking of
 * Istio Services"): each application container's httpGet, tcpSocket and grpc liveness, readiness and
 * startup probe becomes an httpGet to the proxy's status port (15020) at
 * `/app-health/<container>/livez|readyz|startupz`, and the original probes go to the proxy in
 * `ISTIO_KUBE_APP_PROBERS` (shared/internal/app_probers.ts), which performs them against 127.0.0.1.
 * So a STRICT PeerAuthentication, which refuses the kubelet's plain-text probes on the application's
 * ports, does not fail the pod. Pure.
 *
 * Left alone: exec probes; probes of init containers (Istio rewrites `containers` only); a probe whose
 * named port the container does not declare (the kubelet reports that itself); a probe with a `host`
 * other than the pod's loopback (it does not probe this pod, so mutual TLS does not stand in its way).
 * An HTTPS probe becomes HTTP to the proxy, which speaks HTTPS to the application (without
 * verification, as the kubelet).
 *
 * @module
 */
import { isObject, type JsonObject, type JsonPatchOperation } from "./json.ts";
import { type AppProber, type AppProbers, PROBE_KINDS, type ProbeField, proberPath } from "../app_probers.ts";

/** The annotations that turn the rewrite on or off for one pod, the mesh's first. */
export const REWRITE_ANNOTATIONS = [
  "sidecar.mesh.io/rewriteAppHTTPProbers",
  "sidecar.istio.io/rewriteAppHTTPProbers",
] as const;

/** Go's strconv.ParseBool, which Istio uses for the annotation. */
function parseBool(v: unknown): boolean | undefined {
  if (typeof v !== "string") return undefined;
  if (["1", "t", "T", "TRUE", "true", "True"].includes(v)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(v)) return false;
  return undefined;
}

/**
 * Whether to rewrite this pod's probes (Istio's `ShouldRewriteAppHTTPProbers`): the first annotation of
 * {@link REWRITE_ANNOTATIONS} holding a Go boolean decides; else `byDefault`
 * (values `sidecarInjectorWebhook.rewriteAppHTTPProbe`, default true).
 */
export function shouldRewriteProbes(annotations: unknown, byDefault: boolean): boolean {
  const a = isObject(annotations) ? annotations : {};
  for (const name of REWRITE_ANNOTATIONS) {
    const v = parseBool(a[name]);
    if (v !== undefined) return v;
  }
  return byDefault;
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

/** A probe's port as a number: a number, or a name the container declares. */
function resolvePort(port: unknown, named: Map<string, number>): number | undefined {
  if (typeof port === "number") {
    return Number.isInteger(port) && port >= 1 && port <= 65535 ? port : undefined;
  }
  return typeof port === "string" ? named.get(port) : undefined;
}

function withoutHost(host: unknown): boolean {
  return host === undefined || host === null || host === "" || LOOPBACK.has(String(host));
}

/** The original probe for the proxy, or undefined when it is not rewritten. */
function originalProber(probe: JsonObject, named: Map<string, number>): AppProber | undefined {
  const timeout = typeof probe.timeoutSeconds === "number" ? { timeoutSeconds: probe.timeoutSeconds } : {};
  if (isObject(probe.httpGet)) {
    const h = probe.httpGet;
    const port = resolvePort(h.port, named);
    if (port === undefined || !withoutHost(h.host)) return undefined;
    const httpGet: JsonObject = { ...h, path: typeof h.path === "string" ? h.path : "/", port };
    delete httpGet.host;
    return { httpGet: httpGet as unknown as AppProber["httpGet"], ...timeout };
  }
  if (isObject(probe.tcpSocket)) {
    const port = resolvePort(probe.tcpSocket.port, named);
    if (port === undefined || !withoutHost(probe.tcpSocket.host)) return undefined;
    return { tcpSocket: { port }, ...timeout };
  }
  if (isObject(probe.grpc)) {
    const port = resolvePort(probe.grpc.port, named);
    if (port === undefined) return undefined;
    const service = typeof probe.grpc.service === "string" ? { service: probe.grpc.service } : {};
    return { grpc: { port, ...service }, ...timeout };
  }
  return undefined;
}

/** The probe the kubelet gets instead: the same thresholds and period, an httpGet to the status port. */
function rewrittenProbe(probe: JsonObject, path: string, statusPort: number): JsonObject {
  const out: JsonObject = { ...probe };
  delete out.tcpSocket;
  delete out.grpc;
  const headers = isObject(probe.httpGet) && Array.isArray(probe.httpGet.httpHeaders)
    ? { httpHeaders: probe.httpGet.httpHeaders }
    : {};
  out.httpGet = { path, port: statusPort, scheme: "HTTP", ...headers };
  return out;
}

/** What {@link probeRewrite} produces. */
export interface ProbeRewrite {
  /** For the proxy's ISTIO_KUBE_APP_PROBERS; empty when no probe was rewritten. */
  probers: AppProbers;
  /** `replace` operations on `/spec/containers/<i>/<probe>`. */
  ops: JsonPatchOperation[];
}

/**
 * Rewrites the probes of the pod's `containers`.
 *
 * @param statusPort the proxy's --statusPort (15020)
 */
export function probeRewrite(spec: JsonObject, statusPort: number): ProbeRewrite {
  const probers: AppProbers = {};
  const ops: JsonPatchOperation[] = [];
  const containers = Array.isArray(spec.containers) ? spec.containers : [];
  containers.forEach((c, i) => {
    if (!isObject(c) || typeof c.name !== "string") return;
    const named = new Map<string, number>();
    for (const p of Array.isArray(c.ports) ? c.ports : []) {
      if (isObject(p) && typeof p.name === "string" && typeof p.containerPort === "number") {
        named.set(p.name, p.containerPort);
      }
    }
    for (const field of Object.keys(PROBE_KINDS) as ProbeField[]) {
      const probe = c[field];
      if (!isObject(probe)) continue;
      const original = originalProber(probe, named);
      if (!original) continue;
      const path = proberPath(c.name, field);
      probers[path] = original;
      ops.push({
        op: "replace",
        path: `/spec/containers/${i}/${field}`,
        value: rewrittenProbe(probe, path, statusPort),
      });
    }
  });
  return { probers, ops };
}
