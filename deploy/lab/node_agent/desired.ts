/**
 * What the node agent's controllers want, computed from listed objects (pure): the pods a Deployment
 * lacks, the EndpointSlice of a Service, a pod's hosts file and the DNAT rules that stand in for
 * kube-proxy, and a container's environment from `env` (values and the downward API).
 *
 * @module
 */
import { createHash } from "node:crypto";

/** The parts of a Kubernetes object the agent reads. */
export interface Obj {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { uid: string; kind: string; name: string }[];
    deletionTimestamp?: string;
    generateName?: string;
  };
  // deno-lint-ignore no-explicit-any
  spec?: any;
  // deno-lint-ignore no-explicit-any
  status?: any;
  /** ConfigMap and Secret data. */
  data?: Record<string, string>;
}

/** Who manages the slices this agent writes (Kubernetes' label). */
export const MANAGED_BY = "lab-node-agent.mesh.io";

/** Whether every `matchLabels`-style pair of `selector` is in `labels`. */
export function selects(
  selector: Record<string, string> | undefined,
  labels: Record<string, string> = {},
): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** The `pod-template-hash` of a Deployment's template (10 hex digits of its JSON's SHA-256). */
export function templateHash(template: unknown): string {
  return createHash("sha256").update(JSON.stringify(template)).digest("hex").slice(0, 10);
}

/**
 * The pod a Deployment makes (Deployment → Pod directly; no ReplicaSet): the template's metadata and
 * spec, `generateName` `<deployment>-<hash>-`, the hash label and an ownerReference to the Deployment.
 */
export function podFromDeployment(d: Obj): Obj {
  const template = d.spec?.template ?? {};
  const hash = templateHash(template);
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "",
      generateName: `${d.metadata.name}-${hash}-`,
      namespace: d.metadata.namespace,
      labels: { ...(template.metadata?.labels ?? {}), "pod-template-hash": hash },
      annotations: template.metadata?.annotations,
      ownerReferences: [{
        apiVersion: "apps/v1",
        kind: "Deployment",
        name: d.metadata.name,
        uid: d.metadata.uid ?? "",
        controller: true,
      } as { uid: string; kind: string; name: string }],
    },
    spec: template.spec,
  };
}

/** Whether a pod's Ready condition is True. */
export function podReady(p: Obj): boolean {
  const conditions: { type: string; status: string }[] = p.status?.conditions ?? [];
  return conditions.some((c) => c.type === "Ready" && c.status === "True");
}

/** A Service port's target on a pod: a number, or a named container port resolved; undefined when it names none. */
export function targetPortOn(
  port: { port: number; targetPort?: number | string },
  pod: Obj,
): number | undefined {
  const t = port.targetPort ?? port.port;
  if (typeof t === "number") return t;
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) if (p.name === t) return p.containerPort;
  }
  return undefined;
}

/**
 * The EndpointSlice of a Service with a selector (Kubernetes' endpointslice controller, one slice per
 * Service): every pod of its namespace that the selector matches and that has an IP, `ready` from the
 * pod's Ready condition, `targetRef` the pod; ports named as the Service's, with the target port
 * (a named one resolved through the first pod's container ports). Undefined for a Service without
 * selector, whose slices someone else writes.
 */
export function endpointSliceFor(svc: Obj, pods: Obj[]): Obj | undefined {
  const selector = svc.spec?.selector;
  if (!selector || Object.keys(selector).length === 0) return undefined;
  const ns = svc.metadata.namespace;
  const members = pods.filter((p) =>
    p.metadata.namespace === ns && !p.metadata.deletionTimestamp && p.status?.podIP &&
    selects(selector, p.metadata.labels)
  ).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const ports = (svc.spec?.ports ?? []).map(
    (sp: { name?: string; port: number; targetPort?: number | string; protocol?: string }) => {
      const onPod = members.length > 0 ? targetPortOn(sp, members[0]) : undefined;
      const port = onPod ?? (typeof sp.targetPort === "number" ? sp.targetPort : sp.port);
      return { name: sp.name ?? "", port, protocol: sp.protocol ?? "TCP" };
    },
  );
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${svc.metadata.name}-lab`,
      namespace: ns,
      labels: {
        "kubernetes.io/service-name": svc.metadata.name,
        "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
      },
      ownerReferences: [
        { apiVersion: "v1", kind: "Service", name: svc.metadata.name, uid: svc.metadata.uid ?? "" } as {
          uid: string;
          kind: string;
          name: string;
        },
      ],
    },
    // deno-lint-ignore no-explicit-any
    ...({ addressType: "IPv4", ports } as any),
    endpoints: members.map((p) => {
      const ready = podReady(p);
      return {
        addresses: [p.status.podIP],
        conditions: { ready, serving: ready, terminating: false },
        nodeName: p.spec?.nodeName,
        targetRef: { kind: "Pod", namespace: ns, name: p.metadata.name, uid: p.metadata.uid },
      };
    }),
  } as Obj;
}

/** A Service reduced to what DNS and kube-proxy need. */
export interface ServiceRoute {
  name: string;
  namespace: string;
  clusterIP: string;
  ports: { port: number; endpoint?: string }[];
}

/**
 * What kube-proxy and DNS need of the Services: cluster IP and, per port, the first ready endpoint
 * (`address:port`) of the Service's slices (by port name). Services without a cluster IP are left out.
 */
export function serviceRoutes(services: Obj[], slices: Obj[]): ServiceRoute[] {
  const out: ServiceRoute[] = [];
  for (const s of services) {
    const ip = s.spec?.clusterIP;
    if (typeof ip !== "string" || ip === "" || ip === "None") continue;
    const mine = slices.filter((sl) =>
      sl.metadata.namespace === s.metadata.namespace &&
      sl.metadata.labels?.["kubernetes.io/service-name"] === s.metadata.name
    );
    const ports = (s.spec?.ports ?? []).map((sp: { name?: string; port: number }) => {
      for (const sl of mine) {
        // deno-lint-ignore no-explicit-any
        const slicePort = ((sl as any).ports ?? []).find((p: { name?: string }) =>
          (p.name ?? "") === (sp.name ?? "")
        );
        // deno-lint-ignore no-explicit-any
        const ep = ((sl as any).endpoints ?? []).find((e: { conditions?: { ready?: boolean } }) =>
          e.conditions?.ready !== false
        );
        if (slicePort && ep) return { port: sp.port, endpoint: `${ep.addresses[0]}:${slicePort.port}` };
      }
      return { port: sp.port };
    });
    out.push({ name: s.metadata.name, namespace: s.metadata.namespace ?? "default", clusterIP: ip, ports });
  }
  return out.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}

/**
 * A pod's /etc/hosts: itself, meshd, and every Service as `<svc>.<ns>`, `<svc>.<ns>.svc`,
 * `<svc>.<ns>.svc.cluster.local` (and `<svc>` in the pod's own namespace) → its cluster IP.
 */
export function podHostsFile(
  pod: { name: string; namespace: string; ip: string },
  meshd: { host: string; ip: string },
  routes: ServiceRoute[],
): string {
  const lines = [
    "127.0.0.1\tlocalhost",
    "::1\tlocalhost ip6-localhost ip6-loopback",
    `${pod.ip}\t${pod.name}`,
    `${meshd.ip}\t${meshd.host} ${meshd.host}.cluster.local`,
  ];
  for (const r of routes) {
    const names = [
      `${r.name}.${r.namespace}`,
      `${r.name}.${r.namespace}.svc`,
      `${r.name}.${r.namespace}.svc.cluster.local`,
    ];
    if (r.namespace === pod.namespace) names.unshift(r.name);
    lines.push(`${r.clusterIP}\t${names.join(" ")}`);
  }
  return lines.join("\n") + "\n";
}

/** The chain the agent fills with DNAT rules in each pod without a sidecar. */
export const SERVICES_CHAIN = "LAB-SERVICES";

/** kube-proxy's rules for a pod without a sidecar: `VIP:port` DNATed to one ready endpoint (argv after `iptables`). */
export function dnatRules(routes: ServiceRoute[]): string[][] {
  return routes.flatMap((r) =>
    r.ports.filter((p) => p.endpoint !== undefined).map((p) => [
      "-w",
      "-t",
      "nat",
      "-A",
      SERVICES_CHAIN,
      "-p",
      "tcp",
      "-d",
      `${r.clusterIP}/32`,
      "--dport",
      String(p.port),
      "-j",
      "DNAT",
      "--to-destination",
      p.endpoint!,
    ])
  );
}

/** The downward-API fields the agent fills, from the pod. */
export function fieldValue(pod: Obj, path: string, podIP: string, node: string): string | undefined {
  switch (path) {
    case "metadata.name":
      return pod.metadata.name;
    case "metadata.namespace":
      return pod.metadata.namespace;
    case "metadata.uid":
      return pod.metadata.uid;
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "default";
    case "spec.nodeName":
      return node;
    case "status.podIP":
      return podIP;
    case "status.hostIP":
      return podIP;
  }
  const m = /^metadata\.(labels|annotations)\['([^']+)'\]$/.exec(path);
  if (m) return (m[1] === "labels" ? pod.metadata.labels : pod.metadata.annotations)?.[m[2]] ?? "";
  return undefined;
}

/**
 * A container's environment from its `env` (`value`, `valueFrom.fieldRef`), in order, `$(VAR)` of
 * earlier variables expanded as Kubernetes does.
 *
 * @throws Error naming the container and variable for a source the agent does not serve
 *   (secretKeyRef, configMapKeyRef, resourceFieldRef, an unknown field path)
 */
export function containerEnvironment(
  pod: Obj,
  c: {
    name: string;
    env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  },
  podIP: string,
  node: string,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    if (e.valueFrom) {
      const path = e.valueFrom.fieldRef?.fieldPath;
      const v = path === undefined ? undefined : fieldValue(pod, path, podIP, node);
      if (v === undefined) {
        throw new Error(
          `container ${c.name}: env ${e.name}: valueFrom ${
            JSON.stringify(e.valueFrom)
          } is not served by the lab node`,
        );
      }
      env[e.name] = v;
    } else {
      env[e.name] = (e.value ?? "").replace(
        /\$(\$?)\(([A-Za-z_][A-Za-z0-9_]*)\)/g,
        (whole, esc: string, n: string) => esc ? whole.slice(1) : Object.hasOwn(env, n) ? env[n] : whole,
      );
    }
  }
  return env;
}
