/**
 * Helpers for the agent's tests: a real in-process meshd (DiscoveryServer on a temp config
 * directory; optionally the CA and the mutual-TLS port with XDS_AUTH), and polling. Not used by the
 * agent itself.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import type { Buffer } from "node:buffer";
import { CertificateAuthority } from "../../meshd/ca/mod.ts";
import { DiscoveryServer, type DiscoveryServerOptions } from "../../meshd/server/discovery_server.ts";
import { xdsAuthorizer } from "../../meshd/server/xds_auth.ts";
import type { ProxyNode, XdsTransport } from "../../meshd/xds/ads_types.ts";
import { encodeResource, RESOURCE_TYPES } from "../../shared/mod.ts";

export { SERVICE } from "../../meshd/server/test_support.ts";
export { startCa, waitFor } from "../../meshd/ca/test_support.ts";

/** The DNS name in meshd's serving certificate in these tests. */
export const MESHD_NAME = "meshd.mesh-system.svc";

const HOUR = 3_600_000;

/** foo/ratings as a mesh.v1.Service message (port 80 to 8080, HTTP): the one service of the transport tests. */
export function ratingsService(): Uint8Array {
  return encodeResource(RESOURCE_TYPES.service, {
    name: "ratings",
    namespace: "foo",
    hosts: ["ratings.foo.svc.cluster.local"],
    ports: [{ name: "http", number: 80, targetPort: 8080, protocol: "HTTP" }],
    location: "MESH_INTERNAL",
    resolution: "STATIC",
  });
}

/** What a secure meshd saw of each ADS stream: the node and the client certificate's serial. */
export interface SeenStream {
  node: string;
  serial: string;
  denied?: string;
}

/** A running meshd: plain-text ADS, and with a CA the mutual-TLS port (ADS + CA, XDS_AUTH on). */
export interface Meshd {
  server: DiscoveryServer;
  grpcPort: number;
  securePort: number;
  seen: SeenStream[];
  stop(): Promise<void>;
}

/** Starts meshd's discovery server in-process on 127.0.0.1. */
export async function startMeshd(
  configDir: string,
  options: {
    grpcPort?: number;
    securePort?: number;
    ca?: CertificateAuthority;
    /** JWKS resolver settings (refresh interval, fetch observer); default meshd's. */
    jwks?: DiscoveryServerOptions["jwks"];
    /** DISCO_JWT_ENABLE_REMOTE_JWKS; default `meshd`. */
    jwksFetchMode?: DiscoveryServerOptions["jwksFetchMode"];
    /** Serving child processes (meshd/server/serving); default 0, served in this process. */
    servingChildren?: number;
    /** The mesh config's data-path settings; default shared's DEFAULT_PROXY_SETTINGS. */
    proxySettings?: DiscoveryServerOptions["proxySettings"];
  } = {},
): Promise<Meshd> {
  const seen: SeenStream[] = [];
  const ca = options.ca;
  const auth = xdsAuthorizer({ enabled: true, trustDomain: "cluster.local" });
  const secure = ca
    ? {
      addr: `127.0.0.1:${options.securePort ?? 0}`,
      certificates:
        (await ca.serverCredentials({ dnsNames: [MESHD_NAME, "localhost"], ipAddresses: ["127.0.0.1"] }))
          .provider,
      register: (s: Pick<grpc.Server, "addService">) => ca.register(s),
    }
    : undefined;
  const server = new DiscoveryServer({
    configDir,
    grpcAddr: `127.0.0.1:${options.grpcPort ?? 0}`,
    debounceAfterMs: 50,
    debounceMaxMs: 500,
    logger: { info() {}, warn() {}, error() {} },
    secure,
    jwks: options.jwks,
    jwksFetchMode: options.jwksFetchMode,
    servingChildren: options.servingChildren,
    proxySettings: options.proxySettings,
    authorize: (
      call: grpc.ServerDuplexStream<unknown, unknown>,
      node: ProxyNode,
      transport: XdsTransport,
    ) => {
      const peer = call.getAuthContext().sslPeerCertificate;
      const decision = auth(call, node, transport);
      seen.push({
        node: node.id,
        serial: peer?.serialNumber ?? "",
        denied: decision.ok ? undefined : decision.reason,
      });
      return decision;
    },
  });
  const { grpcPort, securePort } = await server.start();
  return { server, grpcPort, securePort, seen, stop: () => server.stop(200) };
}

/** One CreateCertificate call as the recording CA service saw it. */
export interface SeenCsr {
  at: number;
  /** The request bytes exactly as received. */
  raw: Uint8Array;
  /** The request as meshd decodes it. */
  request: { csr: string; validityDuration: number; metadata: Record<string, string> };
  /** The request re-encoded from `request`: equal to `raw` when nothing else was sent. */
  reencoded: Uint8Array;
  authorization?: string;
  /** Serial number of the TLS client certificate, when one was presented. */
  peerSerial?: string;
  /** The gRPC status code answered (0 for success). */
  code?: number;
}

/**
 * meshd's real CA service (createCertificateHandler over the CA) on its own mutual-TLS port,
 * recording every request as raw bytes, and failing with UNAVAILABLE while `failing` is set.
 */
export async function startRecordingCa(ca: CertificateAuthority): Promise<{
  port: number;
  seen: SeenCsr[];
  failing: { on: boolean };
  stop(): void;
}> {
  const { certificateProtocol, createCertificateHandler } = await import("../../meshd/ca/ca_service.ts");
  const { parseSpiffeId } = await import("../../shared/mod.ts");
  const seen: SeenCsr[] = [];
  const failing = { on: false };
  const inner = createCertificateHandler({
    authenticate: (cred) => ca.authenticate(cred),
    sign: ({ csrPem, spiffeId, ttlSeconds }) => {
      const id = parseSpiffeId(spiffeId);
      return ca.sign({
        csrPem,
        namespace: id.namespace,
        serviceAccount: id.serviceAccount,
        ttlMs: ttlSeconds * 1000,
      });
    },
    defaultTtlMs: HOUR,
    maxTtlMs: 24 * HOUR,
    trustDomain: "cluster.local",
  });
  const base = certificateProtocol().service.CreateCertificate;
  const definition = {
    CreateCertificate: {
      ...base,
      requestDeserialize: (raw: Buffer) => ({
        raw: new Uint8Array(raw),
        request: base.requestDeserialize(raw),
      }),
    },
  };
  const server = new grpc.Server();
  server.addService(definition as unknown as grpc.ServiceDefinition, {
    // deno-lint-ignore no-explicit-any
    CreateCertificate: (call: any, callback: grpc.sendUnaryData<unknown>) => {
      const { raw, request } = call.request;
      const auth = call.metadata.get("authorization");
      const entry: SeenCsr = {
        at: Date.now(),
        raw,
        request,
        reencoded: new Uint8Array(base.requestSerialize(request)),
        authorization: auth.length ? String(auth[0]) : undefined,
        peerSerial: call.getAuthContext().sslPeerCertificate?.serialNumber,
      };
      seen.push(entry);
      if (failing.on) {
        entry.code = grpc.status.UNAVAILABLE;
        return callback({ code: grpc.status.UNAVAILABLE, details: "the CA is failing on purpose" });
      }
      call.request = request;
      inner(call, (err, res) => {
        entry.code = err ? (err as grpc.ServiceError).code ?? grpc.status.UNKNOWN : 0;
        callback(err, res);
      });
    },
  });
  const { credentials } = await ca.serverCredentials({ dnsNames: [MESHD_NAME], ipAddresses: ["127.0.0.1"] });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", credentials, (e, p) => (e ? reject(e) : resolve(p)))
  );
  return { port, seen, failing, stop: () => server.forceShutdown() };
}

/**
 * The mesh config of a STRICT sidecar pair in namespace `foo`, as the pair tests and the bench use it:
 * a ServiceEntry `<app>.foo.svc.cluster.local` with `ports` (each a YAML flow mapping, e.g.
 * `{name: grpc, number: 9000, targetPort: 15006, protocol: GRPC}`), its WorkloadEntry `<app>-1` on
 * 127.0.0.1 (service account `<app>`), the client's WorkloadEntry `sleep-1` on 127.0.0.2 and a
 * namespace-wide STRICT PeerAuthentication; `addresses`: the ServiceEntry's (VIPs), if any.
 */
export function strictPairConfig(app: string, ports: string[], addresses?: string[]): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ${app}, namespace: foo}
spec:
  hosts: [${app}.foo.svc.cluster.local]${addresses ? `\n  addresses: [${addresses.join(", ")}]` : ""}
  ports:
${ports.map((p) => `  - ${p}`).join("\n")}
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: ${app}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: ${app}-1, namespace: foo}
spec: {address: 127.0.0.1, labels: {app: ${app}}, serviceAccount: ${app}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: sleep-1, namespace: foo}
spec: {address: 127.0.0.2, labels: {app: sleep}, serviceAccount: sleep}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
`;
}
