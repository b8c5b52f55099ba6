/**
 * The JSONPatch that injects a sidecar into a pod (Istio's `injectPod` in istio/istio
 * pkg/kube/inject/inject.go, built from values instead of Go templates). Pure.
 *
 * What it adds:
 * - `mesh-init`, an init container that installs the lab sidecar's traffic capture
 *   (shared/internal/lab/redirect.ts: TCP leaving the pod is redirected to the proxy's outbound
 *   listener 127.0.0.1:15001), preceded by returns for the proxy's own uid and gid, loopback,
 *   `excludeIPRanges` and Istio's `traffic.sidecar.istio.io/*Outbound*` annotations; it needs
 *   NET_ADMIN and NET_RAW, runs as root, and `iptables` in the image (the proxy needs neither);
 * - `mesh-proxy`, the proxy (`proxy/main.ts`), as a container, or with native sidecars
 *   (ENABLE_NATIVE_SIDECARS) as an init container with `restartPolicy: Always` after `mesh-init`;
 *   its node is the pod (`--workloadEntry=$(POD_NAME)`), inbound ports are the application
 *   containers' TCP container ports, forwarded to 127.0.0.1 (the lab sidecar's inbound);
 * - volumes: `mesh-token`, a projected service-account token whose audience is TOKEN_AUDIENCES's
 *   first, at the proxy's default `--tokenFile`; `mesh-ca-root`, the ConfigMap `mesh-ca-root-cert`
 *   (key `root-cert.pem`, as Istio's `istio-ca-root-cert`) at the proxy's default `--rootCertFile`;
 * - annotation `sidecar.mesh.io/status` (what was injected; marks the pod as injected) and label
 *   `security.istio.io/tlsMode: istio` (the pod speaks mutual TLS).
 *
 * - the app prober rewrite (probe_rewrite.ts): the application containers' probes point at the
 *   proxy's `--statusPort` 15020, the originals go to the proxy in `ISTIO_KUBE_APP_PROBERS`.
 *
 * @module
 */
import { isObject, type JsonObject, type JsonPatchOperation, pointerSegment } from "./json.ts";
import { cidrList, type InjectionTemplate } from "./template.ts";
import { captureRuleSets } from "../lab/redirect.ts";
import { SIDECAR_ADMIN_PORT, SIDECAR_OUTBOUND_PORT } from "../lab/plan.ts";
import { DEFAULT_STATUS_PORT, KUBE_APP_PROBERS_ENV } from "../app_probers.ts";
import { probeRewrite, shouldRewriteProbes } from "./probe_rewrite.ts";

/** The injected containers' and volumes' names. */
export const PROXY_CONTAINER = "mesh-proxy";
/** See {@link PROXY_CONTAINER}. */
export const INIT_CONTAINER = "mesh-init";
/** See {@link PROXY_CONTAINER}. */
export const TOKEN_VOLUME = "mesh-token";
/** See {@link PROXY_CONTAINER}. */
export const ROOT_VOLUME = "mesh-ca-root";
/** The ConfigMap holding the mesh root (`root-cert.pem`), Istio's istio-ca-root-cert. */
export const ROOT_CONFIG_MAP = "mesh-ca-root-cert";
/** How long the projected token lives, s (Istio's 43200). */
export const TOKEN_EXPIRATION_SECONDS = 43200;

/** Settings from meshd's environment. */
export interface InjectionSettings {
  /** ENABLE_NATIVE_SIDECARS. */
  nativeSidecars: boolean;
  /** The projected token's audience (TOKEN_AUDIENCES's first). */
  tokenAudience: string;
  /** This meshd's revision, recorded in the status annotation. */
  revision: string;
}

function list(o: JsonObject, field: string): JsonObject[] {
  const v = o[field];
  return Array.isArray(v) ? v.filter(isObject) : [];
}

/** The application containers' TCP container ports, each once, in order. */
export function inboundPorts(spec: JsonObject): number[] {
  const ports = new Set<number>();
  for (const c of list(spec, "containers")) {
    for (const p of list(c, "ports")) {
      const n = p.containerPort;
      if (typeof n === "number" && Number.isInteger(n) && (p.protocol ?? "TCP") === "TCP") ports.add(n);
    }
  }
  return [...ports];
}

/** Istio's pod annotations that change the capture (istio-iptables `-o`, `-x`, `-i`). */
export const INCLUDE_OUTBOUND_IP_RANGES = "traffic.sidecar.istio.io/includeOutboundIPRanges";
/** See {@link INCLUDE_OUTBOUND_IP_RANGES}. */
export const EXCLUDE_OUTBOUND_IP_RANGES = "traffic.sidecar.istio.io/excludeOutboundIPRanges";
/** See {@link INCLUDE_OUTBOUND_IP_RANGES}. */
export const EXCLUDE_OUTBOUND_PORTS = "traffic.sidecar.istio.io/excludeOutboundPorts";

function annotation(annotations: unknown, name: string): string | undefined {
  const v = isObject(annotations) ? annotations[name] : undefined;
  return typeof v === "string" ? v : undefined;
}

/**
 * The init container's shell script: one `iptables` per rule (shared/internal/lab/redirect.ts
 * `captureRuleSets`: every outbound TCP connection but the proxy's own uid and gid, loopback and the
 * exclusions), then the same for IPv6 with `ip6tables` (`::1/128`, the IPv6 ranges) when the pod's
 * kernel has IPv6 (`/proc/net/if_inet6`: without it ip6tables' nat table cannot exist and the pod
 * has no IPv6 traffic to capture); stop at the first failure. The pod's annotations override the
 * template's ranges, as in Istio.
 *
 * @param annotations the pod's `metadata.annotations`
 * @throws Error naming the annotation when one is not a CIDR list or a port list
 */
export function redirectScript(t: InjectionTemplate, annotations?: unknown): string {
  const ranges = (name: string, fallback: string[]) => {
    const v = annotation(annotations, name);
    if (v === undefined) return fallback;
    return cidrList(v, (entry) => {
      throw new Error(
        `pod annotation ${name}: ${JSON.stringify(entry)} is not a CIDR (e.g. 10.96.0.0/12) or *`,
      );
    });
  };
  const ports = (annotation(annotations, EXCLUDE_OUTBOUND_PORTS) ?? "").split(",").map((p) => p.trim())
    .filter((p) => p !== "").map((p) => {
      const n = Number(p);
      if (!/^\d+$/.test(p) || n < 1 || n > 65535) {
        throw new Error(
          `pod annotation ${EXCLUDE_OUTBOUND_PORTS}: ${JSON.stringify(p)} is not a port (1-65535)`,
        );
      }
      return n;
    });
  const [v4, v6] = captureRuleSets({
    port: SIDECAR_OUTBOUND_PORT,
    proxyUid: t.proxyUid,
    proxyGid: t.proxyUid,
    includeIPRanges: ranges(INCLUDE_OUTBOUND_IP_RANGES, t.includeIPRanges),
    excludeIPRanges: ranges(EXCLUDE_OUTBOUND_IP_RANGES, t.excludeIPRanges),
    excludePorts: ports,
  });
  // Every token is a fixed word, a number or a CIDR checked by the template parser: nothing to quote.
  const lines = (set: typeof v4) => set.rules.map((r) => `${set.tool} ${r.join(" ")}`);
  return ["set -e", ...lines(v4), "if [ -e /proc/net/if_inet6 ]; then", ...lines(v6), "fi"].join("\n");
}

function fieldEnv(name: string, fieldPath: string): JsonObject {
  return { name, valueFrom: { fieldRef: { fieldPath } } };
}

/**
 * The proxy container (native sidecar: with `restartPolicy: Always`).
 *
 * @param probers the JSON of ISTIO_KUBE_APP_PROBERS when probes were rewritten: the proxy then serves
 *   them on --statusPort
 */
export function proxyContainer(
  pod: JsonObject,
  t: InjectionTemplate,
  s: InjectionSettings,
  probers?: string,
): JsonObject {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const metadata = isObject(pod.metadata) ? pod.metadata : {};
  const labels = isObject(metadata.labels) ? metadata.labels : {};
  const labelText = Object.entries(labels).filter(([, v]) => typeof v === "string").map(([k, v]) =>
    `${k}=${v}`
  );
  const container: JsonObject = {
    name: PROXY_CONTAINER,
    image: t.image,
    imagePullPolicy: t.imagePullPolicy,
    args: [
      "--type=sidecar",
      `--discoveryAddress=${t.discoveryAddress}`,
      "--namespace=$(POD_NAMESPACE)",
      "--serviceAccount=$(SERVICE_ACCOUNT)",
      "--workloadEntry=$(POD_NAME)",
      "--address=$(INSTANCE_IP)",
      ...(labelText.length > 0 ? [`--labels=${labelText.join(",")}`] : []),
      ...inboundPorts(spec).map((p) => `--inbound=${p}=127.0.0.1:${p}`),
      `--outbound=127.0.0.1:${SIDECAR_OUTBOUND_PORT}`,
      `--proxy-admin-port=${SIDECAR_ADMIN_PORT}`,
      ...(probers === undefined ? [] : [`--statusPort=${DEFAULT_STATUS_PORT}`]),
    ],
    env: [
      fieldEnv("POD_NAME", "metadata.name"),
      fieldEnv("POD_NAMESPACE", "metadata.namespace"),
      fieldEnv("INSTANCE_IP", "status.podIP"),
      fieldEnv("SERVICE_ACCOUNT", "spec.serviceAccountName"),
      ...(probers === undefined ? [] : [{ name: KUBE_APP_PROBERS_ENV, value: probers }]),
    ],
    securityContext: {
      runAsUser: t.proxyUid,
      runAsGroup: t.proxyUid,
      runAsNonRoot: true,
      allowPrivilegeEscalation: t.privileged,
      privileged: t.privileged,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    },
    volumeMounts: [
      { name: TOKEN_VOLUME, mountPath: "/var/run/secrets/tokens", readOnly: true },
      { name: ROOT_VOLUME, mountPath: "/var/run/secrets/mesh", readOnly: true },
    ],
  };
  if (t.resources) container.resources = t.resources;
  if (s.nativeSidecars) container.restartPolicy = "Always";
  return container;
}

/** The init container that installs the redirection (`annotations`: the pod's, see {@link redirectScript}). */
export function initContainer(t: InjectionTemplate, annotations?: unknown): JsonObject {
  return {
    name: INIT_CONTAINER,
    image: t.image,
    imagePullPolicy: t.imagePullPolicy,
    command: ["sh", "-c", redirectScript(t, annotations)],
    securityContext: {
      runAsUser: 0,
      runAsGroup: 0,
      runAsNonRoot: false,
      allowPrivilegeEscalation: false,
      privileged: t.privileged,
      readOnlyRootFilesystem: false,
      capabilities: { add: ["NET_ADMIN", "NET_RAW"], drop: ["ALL"] },
    },
  };
}

/** The two volumes. */
export function sidecarVolumes(s: InjectionSettings): JsonObject[] {
  return [
    {
      name: TOKEN_VOLUME,
      projected: {
        sources: [{
          serviceAccountToken: {
            audience: s.tokenAudience,
            expirationSeconds: TOKEN_EXPIRATION_SECONDS,
            path: "mesh-token",
          },
        }],
      },
    },
    {
      name: ROOT_VOLUME,
      configMap: { name: ROOT_CONFIG_MAP, items: [{ key: "root-cert.pem", path: "root-cert.pem" }] },
    },
  ];
}

/** Appends `items` to the array at `path` of `parent[field]`, creating it when absent (JSONPatch cannot append to nothing). */
function append(
  ops: JsonPatchOperation[],
  parent: JsonObject,
  path: string,
  field: string,
  items: unknown[],
): void {
  if (!Array.isArray(parent[field])) {
    ops.push({ op: "add", path: `${path}/${field}`, value: items });
    return;
  }
  for (const value of items) ops.push({ op: "add", path: `${path}/${field}/-`, value });
}

/** Sets keys of the string map `metadata[field]`, creating it when absent. */
function setKeys(
  ops: JsonPatchOperation[],
  metadata: JsonObject,
  field: string,
  entries: Record<string, string>,
): void {
  if (!isObject(metadata[field])) {
    ops.push({ op: "add", path: `/metadata/${field}`, value: entries });
    return;
  }
  for (const [k, value] of Object.entries(entries)) {
    ops.push({ op: "add", path: `/metadata/${field}/${pointerSegment(k)}`, value });
  }
}

/**
 * The patch that injects `pod` (decide first: shared/internal/inject/injection_policy.ts).
 *
 * @returns RFC 6902 operations against the pod as the API server sent it
 */
export function injectionPatch(
  pod: JsonObject,
  t: InjectionTemplate,
  s: InjectionSettings,
): JsonPatchOperation[] {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const metadata = isObject(pod.metadata) ? pod.metadata : {};
  const ops: JsonPatchOperation[] = [];
  if (!isObject(pod.metadata)) ops.push({ op: "add", path: "/metadata", value: {} });
  const rewrite = shouldRewriteProbes(metadata.annotations, t.rewriteAppProbes)
    ? probeRewrite(spec, DEFAULT_STATUS_PORT)
    : { probers: {}, ops: [] };
  const rewritten = Object.keys(rewrite.probers).length > 0;
  const proxy = proxyContainer(pod, t, s, rewritten ? JSON.stringify(rewrite.probers) : undefined);
  // Replacing probes first: their indexes are those of the containers as sent.
  ops.push(...rewrite.ops);
  append(
    ops,
    spec,
    "/spec",
    "initContainers",
    s.nativeSidecars
      ? [initContainer(t, metadata.annotations), proxy]
      : [initContainer(t, metadata.annotations)],
  );
  if (!s.nativeSidecars) append(ops, spec, "/spec", "containers", [proxy]);
  append(ops, spec, "/spec", "volumes", sidecarVolumes(s));
  setKeys(ops, metadata, "annotations", {
    "sidecar.mesh.io/status": JSON.stringify({
      initContainers: s.nativeSidecars ? [INIT_CONTAINER, PROXY_CONTAINER] : [INIT_CONTAINER],
      containers: s.nativeSidecars ? [] : [PROXY_CONTAINER],
      volumes: [TOKEN_VOLUME, ROOT_VOLUME],
      revision: s.revision,
    }),
  });
  setKeys(ops, metadata, "labels", { "security.istio.io/tlsMode": "istio" });
  return ops;
}
