/**
 * meshd's address and roots as the proxy's agent and meshctl need them, without gRPC: the host of an
 * address, and the roots that meshd's serving certificate is verified with. Kept apart from
 * meshd_channel.ts (grpc-js credentials) so that the proxy, which talks gRPC over Deno's fetch, does
 * not load grpc-js for them.
 *
 * @module
 */

/** The host part of `host:port`, `[v6]:port` or a bare host. */
export function hostOf(address: string): string {
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracket) return bracket[1];
  const colon = address.lastIndexOf(":");
  if (colon > 0 && address.indexOf(":") === colon) return address.slice(0, colon);
  return address;
}

/**
 * The roots to verify meshd with: the configured ones (root-cert.pem) and those meshd sent with the
 * workload certificate, each certificate once. The received bundle came over a connection verified
 * with roots already trusted, and after meshd rotates its self-signed root it holds the new root,
 * which the configured file may lack (istiod's roots reach pilot-agent the same way, through the CA's
 * answer and the istio-ca-root-cert ConfigMap).
 */
export function meshdRoots(configuredPem: string, receivedPem?: string): string {
  const blocks = `${configuredPem}\n${receivedPem ?? ""}`.match(
    /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g,
  ) ?? [];
  return [...new Set(blocks.map((b) => b.replace(/\r/g, "")))].map((b) => b + "\n").join("");
}
