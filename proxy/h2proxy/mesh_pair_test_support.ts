/**
 * A client proxy and a server proxy on loopback, as the HTTP/2 tests run them: an
 * {@link OutboundListener} for the client workload (sleep) and an {@link InboundListener} in STRICT
 * mode in front of the application (echo), each with its own runtime snapshot and a workload
 * certificate of one test CA, so the traffic between them is mutual TLS with secure naming. The
 * application's service `echo.foo.svc.cluster.local` has one port (9000) whose protocol the test
 * names (GRPC, HTTP2, HTTP or none: auto-detect); its endpoint, seen from the client, is the inbound
 * listener. The server's policies (AuthorizationPolicy, RequestAuthentication) are set per test.
 * Not used by the proxy itself.
 *
 * @module
 */
import { InboundListener } from "../inbound/listener.ts";
import type { InboundStats } from "../inbound/observer.ts";
import { OutboundListener } from "../outbound/listener.ts";
import type { OutboundStats } from "../outbound/outbound_stats.ts";
import type { CertificateInfo, RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import { certificateInfo, makeCa, makeLeaf, RecordingLog, snapshotOf } from "../inbound/test_support.ts";
import { ISTIO_LABELS, IstioMetrics } from "../http/istio_metrics.ts";
import type { ListenerLimits } from "../http/conn_limits.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

export const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/echo";
export const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";
/** The service's host and port as the client application names them (`:authority`). */
export const ECHO_HOST = "echo.foo.svc.cluster.local";
export const ECHO_PORT = 9000;

/** The certificates of the two workloads, from one CA. */
export interface PairCerts {
  server: CertificateInfo;
  client: CertificateInfo;
}

/** Makes a CA and the two workload certificates. */
export async function pairCerts(): Promise<PairCerts> {
  const ca = await makeCa("Mesh Root CA");
  return {
    server: certificateInfo(await makeLeaf(ca, { uris: [SERVER_ID] }), ca, SERVER_ID),
    client: certificateInfo(await makeLeaf(ca, { uris: [CLIENT_ID] }), ca, CLIENT_ID),
  };
}

/**
 * The echo service with one endpoint on 127.0.0.1:`endpointPort`; `proxied` false makes the client
 * proxy connect to it in plain text (an application without a sidecar).
 */
export function echoService(
  protocol: string,
  endpointPort: number,
  workload: string,
  proxied = true,
): ServiceInfo {
  const endpoint = endpointInfo({
    workload,
    ports: { [String(ECHO_PORT)]: endpointPort },
    proxied,
    identity: SERVER_ID,
    labels: { app: "echo" },
  });
  return serviceInfo({
    name: "echo",
    hosts: [ECHO_HOST],
    ports: [{
      name: protocol.toLowerCase() || "port",
      number: ECHO_PORT,
      targetPort: endpointPort,
      protocol,
    }],
    endpoints: [endpoint],
  });
}

/** The issuer of {@link jwtPolicy}'s tokens. */
export const ISSUER = "testing@secure.istio.io";

/**
 * A RequestAuthentication as meshd pushes it (mesh.v1.JwtPolicy, decoded) with inline keys: tokens of
 * {@link ISSUER} in `authorization: Bearer`, the `sub` claim copied to `x-jwt-sub`.
 */
export function jwtPolicy(jwks: string): Record<string, unknown> {
  return {
    name: "jwt",
    namespace: "foo",
    providers: [{
      issuer: ISSUER,
      audiences: [],
      jwks,
      jwksUri: "",
      fromHeaders: [],
      fromParams: [],
      fromCookies: [],
      outputPayloadToHeader: "",
      forwardOriginalToken: false,
      outputClaimToHeaders: [{ header: "x-jwt-sub", claim: "sub" }],
      spaceDelimitedClaims: [],
    }],
  };
}

/** The running pair. */
export interface MeshPair {
  outbound: OutboundListener;
  inbound: InboundListener;
  outboundStats: OutboundStats;
  inboundStats: InboundStats;
  /** `127.0.0.1:<outbound port>`: where the client application connects. */
  outboundAddress: string;
  /** The server proxy's policies: replaces its AuthorizationPolicies and RequestAuthentications. */
  setPolicies(authz: Record<string, unknown>[], jwt?: Record<string, unknown>[]): void;
  serverLog: RecordingLog;
  clientLog: RecordingLog;
  /** Istio's standard request metrics of each proxy. */
  clientMetrics: IstioMetrics;
  serverMetrics: IstioMetrics;
  stop(): Promise<void>;
}

/**
 * Starts the pair in front of the application on `appPort`.
 *
 * @param protocol the protocol of the echo service's port (`GRPC`, `HTTP2`, `HTTP`, `""` for auto-detect)
 * @param clientLimits the client proxy's listener limits (`--requestTimeout`...); the defaults when absent
 */
export async function startPair(
  certs: PairCerts,
  appPort: number,
  protocol: string,
  clientLimits?: Partial<ListenerLimits>,
): Promise<MeshPair> {
  const serverLog = new RecordingLog(), clientLog = new RecordingLog();
  const clientMetrics = new IstioMetrics(), serverMetrics = new IstioMetrics();
  let revision = 1;
  const serverBase = snapshotOf("STRICT", certs.server);
  let server: RuntimeSnapshot = {
    ...serverBase,
    workload: { ...serverBase.workload!, name: "echo", serviceAccount: "echo", labels: { app: "echo" } },
    services: { "foo/echo": echoService(protocol, appPort, "foo/echo") },
  };
  const inbound = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort,
    mtlsPort: appPort,
    snapshot: () => server,
    log: serverLog,
    requestMetrics: serverMetrics,
  });
  await inbound.start();
  const clientBase = snapshotOf("PERMISSIVE", certs.client);
  const client: RuntimeSnapshot = {
    ...clientBase,
    workload: { ...clientBase.workload!, name: "sleep", serviceAccount: "sleep", labels: { app: "sleep" } },
    services: { "foo/echo": echoService(protocol, inbound.port, "foo/echo") },
  };
  const outbound = new OutboundListener({
    address: "127.0.0.1",
    port: 0,
    snapshot: () => client,
    log: clientLog,
    requestMetrics: clientMetrics,
    connectionLimits: clientLimits,
  });
  await outbound.start();
  return {
    outbound,
    inbound,
    outboundStats: outbound.observer as OutboundStats,
    inboundStats: inbound.observer as InboundStats,
    outboundAddress: `127.0.0.1:${outbound.port}`,
    setPolicies(authz, jwt = []) {
      server = {
        ...server,
        revision: ++revision,
        authorizations: Object.fromEntries(authz.map((a) => [`foo/${a.name}`, a])),
        jwtPolicies: Object.fromEntries(jwt.map((j) => [`foo/${j.name}`, j])),
      };
    },
    serverLog,
    clientLog,
    clientMetrics,
    serverMetrics,
    async stop() {
      await Promise.all([outbound.close(), inbound.close()]);
    },
  };
}

/**
 * The request count of `metrics` per `<reporter> <code>` (`grpc`: per `<reporter> <request_protocol>
 * <code> <grpc_response_status>`), for series whose labels include `labels`.
 */
export function requestCounts(
  metrics: IstioMetrics,
  labels: Record<string, string> = {},
  grpc = false,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of metrics.snapshot()) {
    const named = Object.fromEntries(ISTIO_LABELS.map((k, i) => [k, s.labels[i]]));
    if (Object.entries(labels).some(([k, v]) => named[k] !== v)) continue;
    const key = grpc
      ? `${named.reporter} ${named.request_protocol} ${s.code} ${s.grpcStatus}`
      : `${named.reporter} ${s.code}`;
    out[key] = (out[key] ?? 0) + s.count;
  }
  return out;
}
