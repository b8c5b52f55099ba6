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

  /** The next endpoint of a service port: only endpoints with a port for it are eligible. */
  pickEndpoint(
    key: string,
    endpoints: readonly EndpointInfo[],
    servicePort: number,
  ): EndpointChoice | undefined {
    const eligible: EndpointChoice[] = [];
    for (const endpoint of endpoints) {
      const port = endpoint.ports[String(servicePort)];
      if (Number.isInteger(port) && port > 0 && port <= 65535) eligible.push({ endpoint, port });
    }
    return this.pick(`${key}:${servicePort}`, eligible);
  }
}
