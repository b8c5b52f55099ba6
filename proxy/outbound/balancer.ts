/**
 * Endpoint choice: round robin per service port (Envoy's ROUND_ROBIN, unweighted), over the
 * endpoints that serve the port.
 *
 * @module
 */
import type { EndpointInfo } from "../runtime/snapshot.ts";

/** A chosen endpoint and the port to connect to. */
export interface EndpointChoice {
  endpoint: EndpointInfo;
  /** `endpoint.ports[servicePort]`. */
  port: number;
}

/** Round-robin cursors, one per key (a service port). */
export class RoundRobin {
  readonly #next = new Map<string, number>();

  /** The next item for `key`, or undefined when `items` is empty. */
  pick<T>(key: string, items: readonly T[]): T | undefined {
    if (items.length === 0) return undefined;
    const n = this.#next.get(key) ?? 0;
    this.#next.set(key, (n + 1) % 0x7fffffff);
    return items[n % items.length];
  }

  /**
   * Eligible endpoints per endpoint list and service port, and the cursor key: built once per
   * snapshot's list (a snapshot never changes a list in place; a new snapshot brings new lists), so
   * that a request allocates nothing here and always gets the same choice objects.
   */
  readonly #eligible = new WeakMap<readonly EndpointInfo[], Map<number, Eligible>>();

  /** The next endpoint of a service port: only endpoints with a port for it are eligible. */
  pickEndpoint(
    key: string,
    endpoints: readonly EndpointInfo[],
    servicePort: number,
  ): EndpointChoice | undefined {
    let byPort = this.#eligible.get(endpoints);
    if (byPort === undefined) this.#eligible.set(endpoints, byPort = new Map());
    let e = byPort.get(servicePort);
    if (e === undefined || e.service !== key) {
      const choices: EndpointChoice[] = [];
      for (const endpoint of endpoints) {
        const port = endpoint.ports[String(servicePort)];
        if (Number.isInteger(port) && port > 0 && port <= 65535) choices.push({ endpoint, port });
      }
      e = { service: key, cursor: `${key}:${servicePort}`, choices };
      byPort.set(servicePort, e);
    }
    return this.pick(e.cursor, e.choices);
  }
}

interface Eligible {
  /** The service key the list was built for (two services never share a list, but checked). */
  service: string;
  cursor: string;
  choices: EndpointChoice[];
}

/**
 * Weighted round robin over a route's destinations (VirtualService `route[].weight`): out of every
 * `sum of weights` requests, each destination gets its weight, interleaved (smooth weighted round
 * robin, as nginx). Destinations whose weights are all 0 share equally.
 */
export class WeightedRoundRobin {
  readonly #current = new Map<string, number[]>();

  /** The next destination for `key` (a route name). `items` must not be empty. */
  pick<T extends { weight: number }>(key: string, items: readonly T[]): T {
    if (items.length === 1) return items[0];
    let current = this.#current.get(key);
    if (current === undefined || current.length !== items.length) {
      current = new Array(items.length).fill(0);
      this.#current.set(key, current);
    }
    const allZero = items.every((d) => d.weight === 0);
    let total = 0;
    let best = 0;
    for (let i = 0; i < items.length; i++) {
      const w = allZero ? 1 : items[i].weight;
      current[i] += w;
      total += w;
      if (current[i] > current[best]) best = i;
    }
    current[best] -= total;
    return items[best];
  }
}
