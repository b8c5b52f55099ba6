/**
 * Envoy's v3 resource types (Listener, RouteConfiguration, Cluster, ClusterLoadAssignment and the
 * extensions a proxyless gRPC client reads inside them), loaded with protobufjs from the API protos
 * that npm:@grpc/grpc-js-xds ships under deps/. Used to encode what meshd serves to proxyless gRPC
 * (meshd/xds/grpcgen) and, in tests, to decode it.
 *
 * @module
 */
import protobuf from "protobufjs";
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { envoyProtoDirs } from "./envoy_protos.ts";

/** Fully qualified names of the Envoy messages meshd encodes, by short name. */
export const ENVOY_TYPES = {
  listener: "envoy.config.listener.v3.Listener",
  route: "envoy.config.route.v3.RouteConfiguration",
  cluster: "envoy.config.cluster.v3.Cluster",
  endpoint: "envoy.config.endpoint.v3.ClusterLoadAssignment",
  hcm: "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
  router: "envoy.extensions.filters.http.router.v3.Router",
  rbac: "envoy.extensions.filters.http.rbac.v3.RBAC",
  upstreamTls: "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
  downstreamTls: "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
} as const;

const FILES = [
  "envoy/config/listener/v3/listener.proto",
  "envoy/config/route/v3/route.proto",
  "envoy/config/cluster/v3/cluster.proto",
  "envoy/config/endpoint/v3/endpoint.proto",
  "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto",
  "envoy/extensions/filters/http/router/v3/router.proto",
  "envoy/extensions/filters/http/rbac/v3/rbac.proto",
  "envoy/extensions/transport_sockets/tls/v3/tls.proto",
];

let root: protobuf.Root | undefined;

/** The protobufjs root with the Envoy types (loaded once per process, about 0.2 s). */
export function envoyRoot(): protobuf.Root {
  if (root) return root;
  const protobufDir = createRequire(import.meta.url).resolve("protobufjs/package.json").replace(
    /package\.json$/,
    "",
  );
  // protobufjs holds google/protobuf/*.proto (descriptor.proto among them), which the Envoy protos import.
  const includes = [...envoyProtoDirs(), protobufDir];
  const r = new protobuf.Root();
  r.resolvePath = (_origin, target) => {
    for (const dir of includes) if (existsSync(dir + target)) return dir + target;
    return target;
  };
  r.loadSync(FILES, { keepCase: false });
  r.resolveAll();
  root = r;
  return r;
}

/** The type URL of an Envoy message: `type.googleapis.com/<full name>`. */
export function envoyTypeUrl(fullName: string): string {
  return `type.googleapis.com/${fullName}`;
}

/**
 * Encodes a plain object (camelCase fields; a google.protobuf.Any as `{type_url, value}` with the
 * value already encoded, see {@link envoyAny}) as the Envoy message `fullName`.
 *
 * Enums may be given by name. Fields the message does not have are dropped (protobufjs's fromObject):
 * the generators' table tests decode what they encode to catch a misspelt field.
 *
 * @throws TypeError naming the type and the field when a value has the wrong shape
 */
export function encodeEnvoy(fullName: string, value: Record<string, unknown>): Uint8Array {
  const type = envoyRoot().lookupType(fullName);
  try {
    return type.encode(type.fromObject(value)).finish();
  } catch (e) {
    throw new TypeError(`${fullName}: ${(e as Error).message}`);
  }
}

/** A google.protobuf.Any holding the Envoy message `fullName`. */
export function envoyAny(fullName: string, value: Record<string, unknown>): Record<string, unknown> {
  // protobufjs keeps Any's snake_case field names (its built-in definition), camelCase elsewhere.
  return { type_url: envoyTypeUrl(fullName), value: encodeEnvoy(fullName, value) };
}

/** Decodes an Envoy message to a plain object (enums as names, longs as numbers); for tests and debug. */
export function decodeEnvoy(fullName: string, body: Uint8Array): Record<string, unknown> {
  const type = envoyRoot().lookupType(fullName);
  return type.toObject(type.decode(body), { enums: String, longs: Number, defaults: false }) as Record<
    string,
    unknown
  >;
}
