/**
 * Resolves the seed's target syntax `[<type>/]<name>[.<namespace>]` to a connected proxy through
 * meshd's registry of ADS connections (/debug/connections), and finds the proxy's admin interface.
 * Types: `pod` (the default) and `workloadentry`/`we`, both naming the workload instance. The admin
 * interface listens on the proxy's 127.0.0.1, so meshctl must run on the proxy's host (where
 * istioctl would port-forward); its port is the proxy's PROXY_CONFIG.proxyAdminPort node metadata,
 * or `--proxy-admin-port` when given.
 *
 * @module
 */
import type { MeshdDebugSource } from "./meshd_client.ts";

/** A parsed target. */
export interface Target {
  name: string;
  namespace: string;
}

const TYPES = new Set(["pod", "pods", "po", "workloadentry", "workloadentries", "we"]);

/**
 * Parses `[<type>/]<name>[.<namespace>]`; the namespace defaults to `defaultNamespace`.
 *
 * @throws Error naming the target and the reason
 */
export function parseTarget(text: string, defaultNamespace: string): Target {
  let rest = text;
  const slash = rest.indexOf("/");
  if (slash >= 0) {
    const type = rest.slice(0, slash).toLowerCase();
    if (!TYPES.has(type)) {
      throw new Error(
        `target ${
          JSON.stringify(text)
        }: resource type "${type}" is not supported; use pod/<name>[.<namespace>] ` +
          `or workloadentry/<name>[.<namespace>]`,
      );
    }
    rest = rest.slice(slash + 1);
  }
  // The last dot, as istioctl's inferNsInfo: registered names carry the address (`web-10.0.0.3.foo`).
  const dot = rest.lastIndexOf(".");
  const name = dot >= 0 ? rest.slice(0, dot) : rest;
  const namespace = dot >= 0 ? rest.slice(dot + 1) : defaultNamespace;
  if (!name || !namespace) {
    throw new Error(`target ${JSON.stringify(text)}: expected [<type>/]<name>[.<namespace>]`);
  }
  return { name, namespace };
}

/** A connected proxy as meshd's /debug/connections lists it. */
export interface ConnectedProxy {
  connection: string;
  proxy: string;
  workload: string;
  metadata: Record<string, unknown>;
}

/**
 * Finds the connected proxy of a target.
 *
 * @throws Error naming the target, meshd, and the proxies that are connected
 */
export async function findProxy(client: MeshdDebugSource, target: Target): Promise<ConnectedProxy> {
  const connections = await client.json<ConnectedProxy[]>("/debug/connections");
  const key = `${target.namespace}/${target.name}`;
  const found = connections.find((c) => c.workload === key);
  if (!found) {
    const known = connections.map((c) => c.workload.split("/").reverse().join(".")).sort();
    throw new Error(
      `proxy ${target.name}.${target.namespace} not found: no proxy of workload ${key} is connected to meshd at ` +
        `${client.address}` +
        (known.length > 0 ? ` (connected: ${known.join(", ")})` : " (no proxy is connected)"),
    );
  }
  return found;
}

/** The admin address of a proxy: 127.0.0.1 and its advertised port, unless `explicitPort` is given. */
export function adminAddress(
  proxy: ConnectedProxy,
  explicitPort: number | undefined,
  defaultPort: number,
): string {
  const advertised = (proxy.metadata.PROXY_CONFIG as { proxyAdminPort?: unknown } | undefined)
    ?.proxyAdminPort;
  const port = explicitPort ?? (typeof advertised === "number" ? advertised : defaultPort);
  return `127.0.0.1:${port}`;
}
