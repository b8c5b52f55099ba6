/**
 * The event history and the live watchers. Every write gets the next value of one global
 * resourceVersion counter (as etcd's revision) and is kept in a bounded history, so that a watch that
 * starts at resourceVersion R replays the events after R, or ends with `410 Gone` (an ERROR event
 * carrying a Status with code 410) when R is older than the oldest kept event, as kube-apiserver's
 * watch cache does.
 *
 * @module
 */
import type { KubeObject } from "./types.ts";

/** The watch event types (k8s.io/apimachinery/pkg/watch). */
export type EventType = "ADDED" | "MODIFIED" | "DELETED";

/** One stored change. `typeKey` is "group/resource"; `prev` is the object before a MODIFIED change. */
export interface StoredEvent {
  rv: number;
  typeKey: string;
  type: EventType;
  object: KubeObject;
  prev?: KubeObject;
}

/** A live watcher: gets every event of its type after it subscribed. */
export type Listener = (ev: StoredEvent) => void;

/** The history (bounded to `capacity` events) and the listeners per type. */
export class WatchHub {
  #history: StoredEvent[] = [];
  #listeners = new Map<string, Set<Listener>>();
  /** resourceVersion of the newest event evicted from the history (0: none evicted yet). */
  #compacted = 0;

  constructor(readonly capacity: number) {}

  /** Records `ev` and hands it to the listeners of its type. */
  publish(ev: StoredEvent): void {
    this.#history.push(ev);
    while (this.#history.length > this.capacity) this.#compacted = this.#history.shift()!.rv;
    for (const l of this.#listeners.get(ev.typeKey) ?? []) l(ev);
  }

  /** The newest resourceVersion whose events are no longer kept. */
  get compacted(): number {
    return this.#compacted;
  }

  /**
   * The kept events of `typeKey` after `rv`, or undefined when events after `rv` may have been
   * evicted (the caller answers 410 Gone).
   */
  since(typeKey: string, rv: number): StoredEvent[] | undefined {
    if (rv < this.#compacted) return undefined;
    return this.#history.filter((e) => e.rv > rv && e.typeKey === typeKey);
  }

  /** Adds a listener of `typeKey`; returns the function that removes it. */
  subscribe(typeKey: string, l: Listener): () => void {
    const set = this.#listeners.get(typeKey) ?? new Set<Listener>();
    set.add(l);
    this.#listeners.set(typeKey, set);
    return () => set.delete(l);
  }

  /** How many listeners are subscribed (all types). */
  get listenerCount(): number {
    let n = 0;
    for (const s of this.#listeners.values()) n += s.size;
    return n;
  }
}
