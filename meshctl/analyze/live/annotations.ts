/**
 * The annotations of the mesh's and Istio's domains that `meshctl analyze` knows, with the kinds each
 * applies to (Istio's annotation registry, istio.io "Resource Annotations", for the Istio keys; the
 * mesh's own keys from meshd's injector and registry). Used by IST0107 MisplacedAnnotation and
 * IST0108 UnknownAnnotation.
 *
 * @module
 */

/** Kinds an annotation may be on; `*` for any. */
export type AnnotationKinds = readonly ("Pod" | "Service" | "Namespace" | "WorkloadEntry" | "*")[];

const POD: AnnotationKinds = ["Pod"];

/** Known annotations, by key. */
export const KNOWN_ANNOTATIONS: ReadonlyMap<string, AnnotationKinds> = new Map<string, AnnotationKinds>([
  ["galley.istio.io/analyze-suppress", ["*"]],
  ["sidecar.mesh.io/inject", POD],
  ["sidecar.istio.io/inject", POD],
  ["sidecar.mesh.io/status", POD],
  ["sidecar.istio.io/status", POD],
  ["sidecar.mesh.io/rewriteAppHTTPProbers", POD],
  ["sidecar.istio.io/rewriteAppHTTPProbers", POD],
  ["proxy.istio.io/config", POD],
  ["sidecar.istio.io/proxyCPU", POD],
  ["sidecar.istio.io/proxyCPULimit", POD],
  ["sidecar.istio.io/proxyMemory", POD],
  ["sidecar.istio.io/proxyMemoryLimit", POD],
  ["sidecar.istio.io/proxyImage", POD],
  ["sidecar.istio.io/logLevel", POD],
  ["sidecar.istio.io/componentLogLevel", POD],
  ["sidecar.istio.io/interceptionMode", POD],
  ["sidecar.istio.io/userVolume", POD],
  ["sidecar.istio.io/userVolumeMount", POD],
  ["sidecar.istio.io/agentLogLevel", POD],
  ["sidecar.istio.io/statsInclusionPrefixes", POD],
  ["status.sidecar.istio.io/port", POD],
  ["readiness.status.sidecar.istio.io/initialDelaySeconds", POD],
  ["readiness.status.sidecar.istio.io/periodSeconds", POD],
  ["readiness.status.sidecar.istio.io/failureThreshold", POD],
  ["readiness.status.sidecar.istio.io/applicationPorts", POD],
  ["traffic.sidecar.istio.io/includeOutboundIPRanges", POD],
  ["traffic.sidecar.istio.io/excludeOutboundIPRanges", POD],
  ["traffic.sidecar.istio.io/includeInboundPorts", POD],
  ["traffic.sidecar.istio.io/excludeInboundPorts", POD],
  ["traffic.sidecar.istio.io/excludeOutboundPorts", POD],
  ["traffic.sidecar.istio.io/includeOutboundPorts", POD],
  ["inject.istio.io/templates", POD],
  ["prometheus.istio.io/merge-metrics", POD],
  ["networking.istio.io/exportTo", ["Service"]],
  ["networking.mesh.io/autoRegistrationGroup", ["WorkloadEntry"]],
  ["networking.mesh.io/connectedAt", ["WorkloadEntry"]],
]);

/** Whether a key is in the mesh's or Istio's annotation domain (`*.istio.io/…`, `*.mesh.io/…`). */
export function inMeshDomain(key: string): boolean {
  const slash = key.indexOf("/");
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return domain === "istio.io" || domain.endsWith(".istio.io") || domain === "mesh.io" ||
    domain.endsWith(".mesh.io");
}
