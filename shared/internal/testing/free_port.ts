/**
 * Test support that several programs' tests use (meshctl's and the proxy's): a free TCP port.
 *
 * @module
 */

/** A free TCP port on 127.0.0.1 (bound and released). */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}
