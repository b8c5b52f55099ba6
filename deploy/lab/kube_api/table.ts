/**
 * Server-side printing: `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, which `kubectl get`
 * sends, is answered with a meta.k8s.io/v1 Table: for Pods, Services and Deployments some of the columns
 * kube-apiserver prints (pkg/printers/internalversion), for other kinds Name and Age. Rows carry the object's metadata
 * (PartialObjectMetadata), as `includeObject=Metadata`, the default, asks.
 *
 * @module
 */
import type { WireEvent } from "./read_handlers.ts";
import type { ResourceType } from "./resource_types.ts";
import { isObject, type KubeObject, meta, str } from "./types.ts";

/** True when the Accept header asks for a Table. */
export function wantsTable(accept: string | null): boolean {
  return (accept ?? "").split(",").some((p) => p.includes("as=Table") && p.includes("g=meta.k8s.io"));
}

/** kubectl's short age format (k8s.io/apimachinery duration.HumanDuration, simplified). */
export function humanAge(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

/** A column: `priority` 1 shows only with `-o wide`. */
interface Column {
  name: string;
  priority: number;
  value(o: KubeObject): string | number;
}

function part(o: KubeObject, key: string): KubeObject {
  return isObject(o[key]) ? o[key] as KubeObject : {};
}

function age(o: KubeObject): string {
  const created = Date.parse(str(meta(o), "creationTimestamp"));
  return Number.isNaN(created) ? "<unknown>" : humanAge((Date.now() - created) / 1000);
}

function containerStatuses(o: KubeObject): KubeObject[] {
  const cs = part(o, "status").containerStatuses;
  return Array.isArray(cs) ? cs.filter(isObject) : [];
}

/**
 * A pod's STATUS column as kubectl's printer computes it (kubernetes pkg/printers/internalversion printPod,
 * in short): `status.reason`, else the phase; a container's waiting or terminated reason wins (e.g.
 * `ErrImagePull`, `ContainerCreating`); `Terminating` once deletion started.
 */
export function podStatusColumn(o: KubeObject): string {
  const status = part(o, "status");
  let reason = str(status, "reason") || str(status, "phase") || "Unknown";
  for (const c of containerStatuses(o)) {
    const state = isObject(c.state) ? c.state : {};
    const waiting = isObject(state.waiting) ? str(state.waiting, "reason") : "";
    const terminated = isObject(state.terminated) ? str(state.terminated, "reason") : "";
    if (waiting) reason = waiting;
    else if (terminated) reason = terminated;
  }
  return str(meta(o), "deletionTimestamp") ? "Terminating" : reason;
}

const NAME: Column = { name: "Name", priority: 0, value: (o) => str(meta(o), "name") };
const AGE: Column = { name: "Age", priority: 0, value: age };

/** Columns of some kinds as kubectl prints them (pods, services, deployments); others: Name and Age. */
const COLUMNS: Record<string, Column[]> = {
  "/pods": [
    NAME,
    {
      name: "Ready",
      priority: 0,
      value: (o) => {
        const spec = part(o, "spec");
        const total = Array.isArray(spec.containers) ? spec.containers.length : 0;
        return `${containerStatuses(o).filter((c) => c.ready === true).length}/${total}`;
      },
    },
    { name: "Status", priority: 0, value: podStatusColumn },
    {
      name: "Restarts",
      priority: 0,
      value: (o) =>
        containerStatuses(o).reduce(
          (n, c) => n + (typeof c.restartCount === "number" ? c.restartCount : 0),
          0,
        ),
    },
    AGE,
    { name: "IP", priority: 1, value: (o) => str(part(o, "status"), "podIP") || "<none>" },
    { name: "Node", priority: 1, value: (o) => str(part(o, "spec"), "nodeName") || "<none>" },
  ],
  "/services": [
    NAME,
    { name: "Type", priority: 0, value: (o) => str(part(o, "spec"), "type") },
    { name: "Cluster-IP", priority: 0, value: (o) => str(part(o, "spec"), "clusterIP") || "<none>" },
    {
      name: "Ports",
      priority: 0,
      value: (o) => {
        const ports = part(o, "spec").ports;
        const list = Array.isArray(ports) ? ports.filter(isObject) : [];
        return list.map((p) => `${p.port}/${str(p, "protocol") || "TCP"}`).join(",") || "<none>";
      },
    },
    AGE,
  ],
  "apps/deployments": [
    NAME,
    {
      name: "Ready",
      priority: 0,
      value: (o) =>
        `${Number(part(o, "status").readyReplicas ?? 0)}/${Number(part(o, "spec").replicas ?? 1)}`,
    },
    AGE,
  ],
};

function columnsOf(t: ResourceType): Column[] {
  return COLUMNS[`${t.group}/${t.resource}`] ?? [NAME, AGE];
}

function row(columns: Column[], o: KubeObject): KubeObject {
  return {
    cells: columns.map((c) => c.value(o)),
    object: { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: meta(o) },
  };
}

/** A Table of `items`; `listOrObject` gives the Table's resourceVersion (and continue token of a list). */
export function asTable(t: ResourceType, items: KubeObject[], listOrObject: KubeObject): KubeObject {
  const m = meta(listOrObject);
  const columns = columnsOf(t);
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: {
      resourceVersion: str(m, "resourceVersion"),
      ...(str(m, "continue") ? { continue: str(m, "continue") } : {}),
    },
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.name === "Restarts" ? "integer" : "string",
      format: c === NAME ? "name" : "",
      description: c.name,
      priority: c.priority,
    })),
    rows: items.map((o) => row(columns, o)),
  };
}

/** Turns the objects of ADDED/MODIFIED/DELETED watch events into one-row Tables. */
export function tableEncoder(t: ResourceType): (ev: WireEvent) => WireEvent {
  return (ev) => {
    if (ev.type === "ERROR" || ev.type === "BOOKMARK") return ev;
    return { type: ev.type, object: asTable(t, [ev.object], ev.object) };
  };
}
