/**
 * Envoy's aggregated discovery service (envoy.service.discovery.v3.AggregatedDiscoveryService),
 * loaded from the API protos that npm:@grpc/grpc-js-xds ships under deps/ (the ADS envelope); the
 * resources inside are the mesh's own types (shared/proto), or Envoy's for proxyless gRPC (envoy_types.ts).
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { createRequire } from "node:module";

/** The ADS service and its client constructor, loaded once per process. */
export interface AdsProtocol {
  /** Service definition for `server.addService`. */
  service: grpc.ServiceDefinition;
  /** Client constructor for `new client(address, credentials)`. */
  client: grpc.ServiceClientConstructor;
}

let loaded: AdsProtocol | undefined;

/** The folders (ending in `/`) of the API protos that npm:@grpc/grpc-js-xds ships under deps/. */
export function envoyProtoDirs(): string[] {
  const deps = createRequire(import.meta.url).resolve("@grpc/grpc-js-xds/package.json").replace(
    /package\.json$/,
    "deps/",
  );
  return ["envoy-api", "xds", "googleapis", "protoc-gen-validate"].map((d) => `${deps}${d}/`);
}

/** Loads ads.proto with its imports (about 0.1 s; done once). */
export function adsProtocol(): AdsProtocol {
  if (loaded) return loaded;
  const definition = protoLoader.loadSync("envoy/service/discovery/v3/ads.proto", {
    includeDirs: envoyProtoDirs(),
    // Field names as camelCase, bytes as Uint8Array-compatible Buffers, and defaults present, so that
    // handlers never test for undefined lists.
    keepCase: false,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  // deno-lint-ignore no-explicit-any
  const pkg = grpc.loadPackageDefinition(definition) as any;
  const ctor = pkg.envoy.service.discovery.v3.AggregatedDiscoveryService as grpc.ServiceClientConstructor;
  loaded = { service: ctor.service, client: ctor };
  return loaded;
}
