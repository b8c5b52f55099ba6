/**
 * The request `meshctl experimental authz explain` asks about, built from its flags into the
 * shared evaluator's {@link AuthorizationRequest}.
 *
 * @module
 */
import { decodeJwt } from "jose";
import type { AuthorizationRequest } from "../../shared/mod.ts";
import { isObject, type JsonObject, optionalStringFlag, stringFlag, stringsFlag } from "../json_fields.ts";

/** The request flags of `explain`. */
export interface RequestFlags {
  method: string;
  path: string;
  host?: string;
  port: string;
  /** `name=value`, repeatable. */
  header: string[];
  sourcePrincipal?: string;
  sourceNamespace?: string;
  sourceServiceAccount?: string;
  trustDomain: string;
  sourceIp?: string;
  remoteIp?: string;
  destinationIp?: string;
  sni?: string;
  requestPrincipal?: string;
  /** A claims JSON object, or a file holding one or a JWT. */
  jwt?: string;
}

/**
 * Reads the request flags from commander's option record, where `explain` declared them.
 *
 * @throws Error naming the flag when one is missing or not a string
 */
export function requestFlagsOf(opts: JsonObject): RequestFlags {
  const optional = (key: keyof RequestFlags) => optionalStringFlag(opts, key);
  return {
    method: stringFlag(opts, "method"),
    path: stringFlag(opts, "path"),
    host: optional("host"),
    port: stringFlag(opts, "port"),
    header: stringsFlag(opts, "header"),
    sourcePrincipal: optional("sourcePrincipal"),
    sourceNamespace: optional("sourceNamespace"),
    sourceServiceAccount: optional("sourceServiceAccount"),
    trustDomain: stringFlag(opts, "trustDomain"),
    sourceIp: optional("sourceIp"),
    remoteIp: optional("remoteIp"),
    destinationIp: optional("destinationIp"),
    sni: optional("sni"),
    requestPrincipal: optional("requestPrincipal"),
    jwt: optional("jwt"),
  };
}

/** The request, and what the JWT flag gave, for the output. */
export interface ExplainedRequest {
  request: AuthorizationRequest;
  /** Set when `--jwt` named a token: it is decoded, not verified. */
  jwtNote?: string;
}

/** Options of {@link requestFromFlags}. */
export interface RequestOptions {
  /** Reads `--jwt` files; default Deno.readTextFile. */
  readFile?: (path: string) => Promise<string>;
}

function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65535) {
    throw new Error(`--port: "${text}" is not a port number (1-65535)`);
  }
  return port;
}

function parseHeaders(items: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new Error(`--header: "${item}" is not name=value`);
    const name = item.slice(0, eq).trim().toLowerCase();
    const value = item.slice(eq + 1);
    // Repeated headers are joined with "," as Envoy presents them to the rbac filter.
    headers[name] = name in headers ? `${headers[name]},${value}` : value;
  }
  return headers;
}

function sourcePrincipal(flags: RequestFlags): string | undefined {
  if (flags.sourcePrincipal !== undefined) {
    if (flags.sourceNamespace !== undefined || flags.sourceServiceAccount !== undefined) {
      throw new Error("--source-principal excludes --source-namespace and --source-service-account");
    }
    const p = flags.sourcePrincipal;
    return p.startsWith("spiffe://") ? p : `spiffe://${p}`;
  }
  if (flags.sourceNamespace === undefined && flags.sourceServiceAccount === undefined) return undefined;
  const sa = flags.sourceServiceAccount ?? "default";
  return `spiffe://${flags.trustDomain}/ns/${flags.sourceNamespace ?? "default"}/sa/${sa}`;
}

async function claimsOf(
  value: string,
  readFile: (path: string) => Promise<string>,
): Promise<{ claims: Record<string, unknown>; token: boolean }> {
  let text = value.trim();
  if (!text.startsWith("{")) {
    try {
      text = (await readFile(value)).trim();
    } catch (e) {
      throw new Error(`--jwt: ${value}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  try {
    if (text.startsWith("{")) {
      const claims: unknown = JSON.parse(text);
      if (!isObject(claims)) throw new Error("claims must be a JSON object");
      return { claims, token: false };
    }
    return { claims: decodeJwt(text), token: true };
  } catch (e) {
    throw new Error(
      `--jwt: ${value}: neither a claims JSON object nor a JWT: ${
        e instanceof Error ? e.message : String(e)
      }`,
    );
  }
}

/**
 * Builds the evaluator's request from the flags: the source principal from `--source-principal`
 * (`spiffe://` added when missing) or from `--source-namespace`/`--source-service-account` and
 * `--trust-domain`; claims and the request principal `<iss>/<sub>` from `--jwt`.
 *
 * @throws Error naming the flag and the reason
 */
export async function requestFromFlags(
  flags: RequestFlags,
  options: RequestOptions = {},
): Promise<ExplainedRequest> {
  const request: AuthorizationRequest = {
    method: flags.method.toUpperCase(),
    path: flags.path,
    port: parsePort(flags.port),
    headers: parseHeaders(flags.header),
  };
  if (flags.host !== undefined) request.host = flags.host;
  const principal = sourcePrincipal(flags);
  if (principal !== undefined) request.sourcePrincipal = principal;
  for (const k of ["sourceIp", "remoteIp", "destinationIp", "sni", "requestPrincipal"] as const) {
    if (flags[k] !== undefined) request[k] = flags[k];
  }
  let jwtNote: string | undefined;
  if (flags.jwt !== undefined) {
    const { claims, token } = await claimsOf(flags.jwt, options.readFile ?? Deno.readTextFile);
    request.claims = claims;
    if (typeof claims.iss === "string") request.requestPrincipal = `${claims.iss}/${claims.sub ?? ""}`;
    if (token) {
      jwtNote = "the JWT is decoded, not verified: the proxy verifies it against RequestAuthentication";
    }
  }
  return jwtNote ? { request, jwtNote } : { request };
}
