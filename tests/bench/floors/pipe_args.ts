/**
 * The floors' shared command line: `<program> client|server <listen port> <upstream port> <cert file>
 * <key file> <CA file>`, everything on 127.0.0.1. Exits with status 2 and the usage on a bad command line.
 *
 * @module
 */

/** A floor pipe's settings: its role, ports and PEM texts (certificate chain, key, CA). */
export interface PipeArgs {
  role: "client" | "server";
  listen: number;
  upstream: number;
  cert: string;
  key: string;
  ca: string;
}

/** Parses `args` for `program` (its name, for the usage line); reads the three PEM files. */
export function pipeArgs(program: string, args: string[]): PipeArgs {
  const [role, listen, upstream, certFile, keyFile, caFile] = args;
  if ((role !== "client" && role !== "server") || !caFile) {
    console.error(`usage: ${program} client|server <listen port> <upstream port> <cert> <key> <CA>`);
    Deno.exit(2);
  }
  return {
    role,
    listen: Number(listen),
    upstream: Number(upstream),
    cert: Deno.readTextFileSync(certFile),
    key: Deno.readTextFileSync(keyFile),
    ca: Deno.readTextFileSync(caFile),
  };
}
