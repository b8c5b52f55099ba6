/**
 * Where the discovery server listens: the address forms of --grpcAddr and --secureGRPCAddr
 * (`host:port`, `:port`, `[v6]:port`) as grpc-js binds them and as Deno.listen takes them (serving
 * children), and binding a grpc-js server with the flag named in its error.
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";

/** Parses `host:port`, `:port` or `[v6]:port` into what grpc-js binds. */
export function grpcBindAddress(addr: string): string {
  if (addr.startsWith(":")) return `0.0.0.0${addr}`;
  return addr;
}

/** `addr` as grpc-js knows it once bound, with the real port (for unbind: port 0 cannot be unbound). */
export function withPort(addr: string, port: number): string {
  return grpcBindAddress(addr).replace(/:\d+$/, `:${port}`);
}

/** `host:port`, `:port` or `[v6]:port` as Deno.listen takes it. */
export function listenAddress(addr: string): { hostname: string; port: number } {
  const bound = grpcBindAddress(addr);
  const colon = bound.lastIndexOf(":");
  return {
    hostname: bound.slice(0, colon).replace(/^\[(.*)\]$/, "$1"),
    port: Number(bound.slice(colon + 1)),
  };
}

/** Binds `server` to `addr`; resolves with the bound port. @throws naming `flag` and the address */
export function bind(
  server: grpc.Server,
  addr: string,
  credentials: grpc.ServerCredentials,
  flag: string,
): Promise<number> {
  return new Promise<number>((resolve, reject) =>
    server.bindAsync(
      grpcBindAddress(addr),
      credentials,
      (e, port) => (e ? reject(new Error(`${flag} ${addr}: ${e.message}`)) : resolve(port)),
    )
  );
}
