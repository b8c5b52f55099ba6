/**
 * Immutability for the push context. `Object.freeze` does not stop a Map's `set`, `delete` or
 * `clear` (they change its internal slots, not its properties), so the context's maps are
 * {@link FrozenMap}s: read-only views whose mutators throw. Everything else it hands out is a plain
 * object or array, frozen deeply by {@link deepFreeze}.
 *
 * @module
 */

/** A Map that cannot change once built: `set`, `delete` and `clear` throw a TypeError. */
export class FrozenMap<K, V> implements ReadonlyMap<K, V> {
  readonly #map: Map<K, V>;

  /** @param entries the map's content; copied, so later changes to the source do not show through */
  constructor(entries: Iterable<readonly [K, V]> = []) {
    this.#map = new Map(entries);
    Object.freeze(this);
  }

  /** The number of entries. */
  get size(): number {
    return this.#map.size;
  }

  /** The value of `key`, or undefined. */
  get(key: K): V | undefined {
    return this.#map.get(key);
  }

  /** Whether `key` has a value. */
  has(key: K): boolean {
    return this.#map.has(key);
  }

  /** Calls `callback` for each entry, in insertion order. */
  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    this.#map.forEach((value, key) => callback.call(thisArg, value, key, this));
  }

  /** The entries, in insertion order. */
  entries(): MapIterator<[K, V]> {
    return this.#map.entries();
  }

  /** The keys, in insertion order. */
  keys(): MapIterator<K> {
    return this.#map.keys();
  }

  /** The values, in insertion order. */
  values(): MapIterator<V> {
    return this.#map.values();
  }

  /** The entries, in insertion order. */
  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.#map[Symbol.iterator]();
  }

  /** @throws TypeError always: the map is frozen */
  set(_key: K, _value: V): never {
    throw frozen("set");
  }

  /** @throws TypeError always: the map is frozen */
  delete(_key: K): never {
    throw frozen("delete");
  }

  /** @throws TypeError always: the map is frozen */
  clear(): never {
    throw frozen("clear");
  }

  /** `FrozenMap`, for inspection. */
  get [Symbol.toStringTag](): string {
    return "FrozenMap";
  }
}

function frozen(method: string): TypeError {
  return new TypeError(`cannot ${method}: the map is frozen (push context values never change)`);
}

/**
 * Freezes plain objects and arrays reachable from `value`, and the values of {@link FrozenMap}s
 * (which are frozen already themselves). Stops at anything frozen, so shared subtrees are visited
 * once.
 *
 * @returns `value`
 */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (value instanceof FrozenMap) {
    for (const v of value.values()) deepFreeze(v);
    return value;
  }
  if (value instanceof Map || value instanceof Set) {
    throw new TypeError("a push context holds FrozenMaps, never a Map or Set that could still change");
  }
  if (Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
  return value;
}
