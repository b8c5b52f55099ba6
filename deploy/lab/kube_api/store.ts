/**
 * In-memory object storage keyed by type ("group/resource": every version of a type shares one store,
 * as a CRD without conversion webhooks does) and "namespace/name". Every write takes the next value of
 * the global resourceVersion counter and is published to the {@link WatchHub}.
 *
 * @module
 */
import type { ResourceType } from "./resource_types.ts";
import { clone, type KubeObject, meta, str } from "./types.ts";
import { type EventType, WatchHub } from "./watch_hub.ts";

/** The storage key of a type: "group/resource". */
export function typeKeyOf(t: { group: string; resource: string }): string {
  return `${t.group}/${t.resource}`;
}

function objKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** Objects of every type, the resourceVersion counter and the watch hub. */
export class Store {
  #rv = 1;
  #objects = new Map<string, Map<string, KubeObject>>();
  readonly hub: WatchHub;

  constructor(historySize: number) {
    this.hub = new WatchHub(historySize);
  }

  /** The current (newest) resourceVersion. */
  get resourceVersion(): number {
    return this.#rv;
  }

  #bucket(t: ResourceType | string): Map<string, KubeObject> {
    const key = typeof t === "string" ? t : typeKeyOf(t);
    let b = this.#objects.get(key);
    if (!b) this.#objects.set(key, b = new Map());
    return b;
  }

  /** A copy of the stored object, or undefined. */
  get(t: ResourceType, namespace: string, name: string): KubeObject | undefined {
    const o = this.#bucket(t).get(objKey(namespace, name));
    return o && clone(o);
  }

  /** Copies of the objects of `t` (in `namespace` when given), sorted by namespace then name. */
  list(t: ResourceType | string, namespace?: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const [k, o] of [...this.#bucket(t)].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)) {
      if (namespace === undefined || k.startsWith(`${namespace}/`)) out.push(clone(o));
    }
    return out;
  }

  /** Stores `obj` under a new resourceVersion and publishes ADDED or MODIFIED; returns a copy as stored. */
  put(t: ResourceType, obj: KubeObject, type: Exclude<EventType, "DELETED">, prev?: KubeObject): KubeObject {
    const m = meta(obj);
    m.resourceVersion = String(++this.#rv);
    const stored = clone(obj);
    this.#bucket(t).set(objKey(str(m, "namespace"), str(m, "name")), stored);
    this.hub.publish({ rv: this.#rv, typeKey: typeKeyOf(t), type, object: clone(stored), prev });
    return clone(stored);
  }

  /** Removes the object and publishes DELETED with a new resourceVersion; returns it, or undefined. */
  remove(t: ResourceType | string, namespace: string, name: string): KubeObject | undefined {
    const b = this.#bucket(t);
    const o = b.get(objKey(namespace, name));
    if (!o) return undefined;
    b.delete(objKey(namespace, name));
    meta(o).resourceVersion = String(++this.#rv);
    this.hub.publish({
      rv: this.#rv,
      typeKey: typeof t === "string" ? t : typeKeyOf(t),
      type: "DELETED",
      object: clone(o),
    });
    return clone(o);
  }
}
