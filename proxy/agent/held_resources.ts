/**
 * The resources the ADS client holds, by kind, each decoded once (proxy/agent/resources.ts) and kept
 * as its typed value, and where each kind goes in the runtime snapshot. A mapped type keyed by kind
 * keeps a kind and its values' type together, so nothing is cast on the way into the snapshot.
 *
 * @module
 */
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import type { ResourceKind, ResourceValue } from "./resources.ts";

/** The part of the runtime snapshot that comes from ADS. */
export type AdsConfig = Omit<RuntimeSnapshot, "revision" | "certificate">;

/** A resource as received and checked: its version, and its value, decoded once, typed by its kind. */
export interface Held<K extends ResourceKind> {
  version: string;
  value: ResourceValue<K>;
}

/** A resource of a response, decoded and named. */
export interface Decoded<K extends ResourceKind> extends Held<K> {
  name: string;
}

/** What the client holds, by kind; a mapped type, so that `kind` tells the type of every value. */
export type HeldByKind = { [K in ResourceKind]: Map<string, Held<K>> };

/** Nothing held yet, for every kind. */
export function emptyHeld(): HeldByKind {
  return {
    workload: new Map(),
    service: new Map(),
    authorization: new Map(),
    jwtPolicy: new Map(),
    routeConfiguration: new Map(),
    tlsCredential: new Map(),
  };
}

/** The held values by name, in name order, as the config keeps them. */
export function valuesOf<V>(held: ReadonlyMap<string, { value: V }>): Record<string, V> {
  return Object.fromEntries([...held].sort(([a], [b]) => (a < b ? -1 : 1)).map(([n, h]) => [n, h.value]));
}

/**
 * Puts the values held of a kind into the next config: the workload the proxy runs as (its own key,
 * else the only one meshd sent), or every value by name for the other kinds.
 * Indexed by a kind `K` it takes `Held<K>` values (the
 * mapped type keeps the two together), so no value is cast on its way into the config.
 */
export const INSTALL: {
  [K in ResourceKind]: (next: AdsConfig, held: ReadonlyMap<string, Held<K>>, workloadKey: string) => void;
} = {
  workload: (next, held, workloadKey) => {
    const own = held.get(workloadKey) ?? [...held.values()][0];
    if (own) next.workload = own.value;
    else delete next.workload;
  },
  service: (next, held) => void (next.services = valuesOf(held)),
  authorization: (next, held) => void (next.authorizations = valuesOf(held)),
  jwtPolicy: (next, held) => void (next.jwtPolicies = valuesOf(held)),
  routeConfiguration: (next, held) => void (next.routes = valuesOf(held)),
  tlsCredential: (next, held) => void (next.credentials = valuesOf(held)),
};
