/**
 * Server-side printing: `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, which `kubectl get`
 * sends, is answered with a meta.k8s.io/v1 Table of two columns, Name and Age (a real server has
 * per-kind columns; this one prints the same two for every kind). Rows carry the object's metadata
 * (PartialObjectMetadata), as `includeObject=Metadata`, the default, asks.
 *
 * @module
 */
import type { WireEvent } from "./read_handlers.ts";
import type { ResourceType } from "./resource_types.ts";
import { type KubeObject, meta, str } from "./types.ts";

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

function row(o: KubeObject): KubeObject {
  const m = meta(o);
  const created = Date.parse(str(m, "creationTimestamp"));
  const age = Number.isNaN(created) ? "<unknown>" : humanAge((Date.now() - created) / 1000);
  return {
    cells: [str(m, "name"), age],
    object: { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: m },
  };
}

/** A Table of `items`; `listOrObject` gives the Table's resourceVersion (and continue token of a list). */
export function asTable(_t: ResourceType, items: KubeObject[], listOrObject: KubeObject): KubeObject {
  const m = meta(listOrObject);
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: {
      resourceVersion: str(m, "resourceVersion"),
      ...(str(m, "continue") ? { continue: str(m, "continue") } : {}),
    },
    columnDefinitions: [
      { name: "Name", type: "string", format: "name", description: "Name of the object", priority: 0 },
      { name: "Age", type: "string", format: "", description: "Time since creation", priority: 0 },
    ],
    rows: items.map(row),
  };
}

/** Turns the objects of ADDED/MODIFIED/DELETED watch events into one-row Tables. */
export function tableEncoder(t: ResourceType): (ev: WireEvent) => WireEvent {
  return (ev) => {
    if (ev.type === "ERROR" || ev.type === "BOOKMARK") return ev;
    return { type: ev.type, object: asTable(t, [ev.object], ev.object) };
  };
}
