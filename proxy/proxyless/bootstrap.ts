/**
 * The gRPC xDS bootstrap that `proxy --proxyless` writes for proxyless gRPC applications
 * (GRPC_XDS_BOOTSTRAP; gRFC A27 and A29, as Istio's pilot-agent writes it for the
 * `inject.istio.io/templates: grpc-agent` template): meshd's plain-text ADS address, the node with
 * metadata `GENERATOR: grpc` (meshd then serves Envoy's types, see meshd/xds/grpcgen), the
 * certificate provider `default` (file_watcher over the three files the agent keeps renewed) and
 * Istio's server listener name template.
 *
 * @module
 */
import { join } from "node:path";

/** File names of the certificate files in the output directory (Istio's names). */
export const CERT_FILES: { cert: string; key: string; ca: string } = {
  cert: "cert-chain.pem",
  key: "key.pem",
  ca: "root-cert.pem",
};

/** What the bootstrap names. */
export interface GrpcBootstrapOptions {
  /** meshd's plain-text ADS address (--grpcAddr, port 15010): grpc-js-xds has no TLS channel_creds. */
  discoveryAddress: string;
  /** The xDS node id (Istio's `sidecar~<ip>~<name>.<namespace>~<namespace>.svc.<domain>`). */
  nodeId: string;
  /** Node metadata (NAMESPACE, WORKLOAD_NAME, labels...); GENERATOR is set to `grpc`. */
  metadata: Record<string, unknown>;
  /** Directory of the certificate files. */
  certDir: string;
  /** How often gRPC re-reads the certificate files; default `60s`. */
  refreshInterval?: string;
}

/** The bootstrap JSON object (snake_case, as gRPC reads it). */
export function grpcBootstrap(o: GrpcBootstrapOptions): Record<string, unknown> {
  return {
    xds_servers: [{
      server_uri: o.discoveryAddress,
      channel_creds: [{ type: "insecure" }],
      server_features: ["xds_v3"],
    }],
    node: {
      id: o.nodeId,
      metadata: { ...o.metadata, GENERATOR: "grpc" },
      // grpc-js-xds refuses a bootstrap without a locality.
      locality: {},
    },
    certificate_providers: {
      default: {
        plugin_name: "file_watcher",
        config: {
          certificate_file: join(o.certDir, CERT_FILES.cert),
          private_key_file: join(o.certDir, CERT_FILES.key),
          ca_certificate_file: join(o.certDir, CERT_FILES.ca),
          refresh_interval: o.refreshInterval ?? "60s",
        },
      },
    },
    server_listener_resource_name_template: "xds.istio.io/grpc/lds/inbound/%s",
  };
}
