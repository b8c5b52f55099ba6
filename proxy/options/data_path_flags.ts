/**
 * The flag of `proxy` that picks the TLS client of the HTTP/1.1 mesh leg (the client proxy's
 * automatic mutual TLS to a proxied endpoint): node:tls (the default) or Deno's own
 * (`Deno.connectTls`). Both present the workload certificate, verify the server against the mesh roots and
 * check secure naming (proxy/outbound/deno_mtls.ts says how Deno's does it); the figures of each are
 * in proxy/http/README.md "Socket views".
 *
 * @module
 */
import type { ProxyFlag } from "./flag.ts";

/** The TLS clients of the mesh leg. */
export const MESH_TLS_CLIENTS = ["deno", "node"] as const;
export type MeshTlsClient = typeof MESH_TLS_CLIENTS[number];
/**
 * node:tls until Deno's is measured on a quiet machine: on a shared one it cost 8-40 MiB more peak
 * memory in the client proxy, for a CPU gain that the shared machine could not confirm (proxy/tls/README.md).
 */
export const DEFAULT_MESH_TLS_CLIENT: MeshTlsClient = "node";

/** The data-path flags, in `--help` order. */
export const DATA_PATH_FLAGS: readonly ProxyFlag[] = [
  {
    name: "meshTlsClient",
    value: "<deno|node>",
    description: "the TLS client of HTTP/1.1 requests to proxied endpoints (automatic mutual TLS): node " +
      "(node:tls) or deno (Deno.connectTls: less CPU per request, more peak memory, relies on an internal " +
      "Deno method for the server's certificate); both check the server's chain against the mesh roots " +
      "and its SPIFFE ID. TCP, TLS passthrough and HTTP/2 use node:tls",
    default: DEFAULT_MESH_TLS_CLIENT,
  },
];

/** What {@link validateDataPathFlags} reads. */
export interface DataPathOptions {
  meshTlsClient: MeshTlsClient;
}

/**
 * Reads the data-path flags.
 *
 * @param text a flag's text as given, or its default
 * @param err records a bad value: flag name, value, reason
 * @returns the options; a bad value keeps the default (its error is recorded)
 */
export function validateDataPathFlags(
  text: (name: string) => string | undefined,
  err: (name: string, value: string, reason: string) => void,
): DataPathOptions {
  const client = text("meshTlsClient")!;
  if ((MESH_TLS_CLIENTS as readonly string[]).includes(client)) {
    return { meshTlsClient: client as MeshTlsClient };
  }
  err("meshTlsClient", client, `is not one of ${MESH_TLS_CLIENTS.join(", ")}`);
  return { meshTlsClient: DEFAULT_MESH_TLS_CLIENT };
}
