/**
 * Helpers for the inbound tests: a test CA and workload certificates made with @peculiar/x509,
 * snapshots, certificate files, and a log that records. Raw HTTP/1.1 connections are in
 * raw_conn_test_support.ts, curl and the upstream applications (httpbin, a small Deno app) in
 * upstream_apps_test_support.ts; both are re-exported here so that a test imports one module. Not
 * used by the proxy itself.
 *
 * @module
 */
import { DEFAULT_PROXY_SETTINGS } from "../../shared/proxy_settings/mod.ts";
import { join } from "node:path";
import type { Log } from "../http/session_types.ts";
import type { CertificateInfo, PortMtls, RuntimeSnapshot } from "../runtime/snapshot.ts";
import { makeCa, makeLeaf, type TestCa, type TestLeaf } from "../../shared/internal/testing/test_ca.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

export { makeCa, makeLeaf, type TestCa, type TestLeaf } from "../../shared/internal/testing/test_ca.ts";

/** The proxy's certificate as the snapshot carries it. */
export function certificateInfo(leaf: TestLeaf, ca: TestCa, spiffeId: string): CertificateInfo {
  return {
    certChainPem: leaf.certPem,
    privateKeyPem: leaf.keyPem,
    rootsPem: ca.pem,
    spiffeId,
    notBefore: Date.now() - 120_000,
    notAfter: Date.now() + 86400_000,
  };
}

/** A snapshot with a workload in trust domain cluster.local, the given default mode and port modes. */
export function snapshotOf(
  mode: PortMtls["mode"],
  certificate: CertificateInfo | undefined,
  ports: { port: number; mode: PortMtls["mode"] }[] = [],
  revision = 1,
): RuntimeSnapshot {
  return {
    revision,
    versions: {},
    services: {},
    authorizations: {},
    jwtPolicies: {},
    routes: {},
    credentials: {},
    certificate,
    workload: {
      name: "httpbin",
      namespace: "foo",
      serviceAccount: "httpbin",
      trustDomain: "cluster.local",
      addresses: ["127.0.0.1"],
      labels: { app: "httpbin" },
      proxied: true,
      ports: { http: 8000 },
      inboundMtls: ports.map((p) => ({ port: p.port, mode: p.mode, policy: "foo/p", scope: "port" })),
      defaultMtls: { port: 0, mode, policy: "foo/default", scope: "namespace" },
      settings: DEFAULT_PROXY_SETTINGS,
    },
  };
}

/**
 * `snapshot` with a service `foo/httpbin` whose port `port` (targeting container port `port`) has
 * `protocol` (HTTP, TCP, GRPC, ... or UNKNOWN), with this workload as its endpoint: what decides how
 * the inbound listener of that port carries connections (./dispatch.ts).
 */
export function withPortProtocol(snapshot: RuntimeSnapshot, port: number, protocol: string): RuntimeSnapshot {
  return {
    ...snapshot,
    services: {
      ...snapshot.services,
      "foo/httpbin": serviceInfo({
        name: "httpbin",
        addresses: ["10.96.0.10"],
        ports: [{ number: port, protocol }],
        endpoints: [endpointInfo({
          workload: "foo/httpbin",
          ports: { [String(port)]: port },
          identity: "spiffe://cluster.local/ns/foo/sa/httpbin",
          labels: { app: "httpbin" },
        })],
      }),
    },
  };
}

/**
 * A memoizing view of snapshots with container port `port` declared HTTP ({@link withPortProtocol}),
 * for tests whose mesh client is curl: curl offers no Istio ALPN value, so on a PERMISSIVE TCP or
 * auto-detected port its TLS would be the application's own (./front.ts); on an HTTP port it meets
 * mutual TLS.
 */
export function declaredHttp(port: number): (snapshot: RuntimeSnapshot) => RuntimeSnapshot {
  const seen = new WeakMap<RuntimeSnapshot, RuntimeSnapshot>();
  return (snapshot) => {
    let declared = seen.get(snapshot);
    if (declared === undefined) {
      declared = withPortProtocol(snapshot, port, "HTTP");
      seen.set(snapshot, declared);
    }
    return declared;
  };
}

/** One log line. */
export interface LogEntry {
  level: string;
  msg: string;
  fields?: Record<string, unknown>;
}

/** A {@link Log} that keeps every entry (and prints with MESH_TEST_LOG=1). */
export class RecordingLog implements Log {
  readonly entries: LogEntry[] = [];
  #add(level: string, msg: string, fields?: Record<string, unknown>): void {
    this.entries.push({ level, msg, fields });
    if (Deno.env.get("MESH_TEST_LOG") === "1") console.error(level, msg, JSON.stringify(fields ?? {}));
  }
  debug(msg: string, fields?: Record<string, unknown>): void {
    this.#add("debug", msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.#add("info", msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.#add("warn", msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.#add("error", msg, fields);
  }
}

/** Files curl reads: the roots, and client certificates by name. */
export class CertFiles {
  constructor(readonly dir: string) {}
  static async create(): Promise<CertFiles> {
    return new CertFiles(await Deno.makeTempDir({ prefix: "proxy-inbound-test-" }));
  }
  async write(name: string, text: string): Promise<string> {
    const path = join(this.dir, name);
    await Deno.writeTextFile(path, text);
    return path;
  }
  async client(name: string, leaf: TestLeaf): Promise<string[]> {
    return [
      "--cert",
      await this.write(`${name}.pem`, leaf.certPem),
      "--key",
      await this.write(`${name}.key`, leaf.keyPem),
    ];
  }
  remove(): Promise<void> {
    return Deno.remove(this.dir, { recursive: true });
  }
}

/** A mesh CA, httpbin's serving certificate and sleep's client certificate as curl arguments. */
export interface MtlsFixture {
  ca: TestCa;
  clientLeaf: TestLeaf;
  /** httpbin's certificate as the listener's snapshot holds it. */
  cert: CertificateInfo;
  /** curl's `--cacert`, `--cert` and `--key`. */
  mtls: string[];
  files: CertFiles;
}

/** Makes the certificates of httpbin (server, on 127.0.0.1) and sleep (client) in foo. */
export async function mtlsFixture(serverId: string, clientId: string): Promise<MtlsFixture> {
  const ca = await makeCa("Mesh Root CA");
  const serverLeaf = await makeLeaf(ca, { uris: [serverId], ips: ["127.0.0.1"] });
  const clientLeaf = await makeLeaf(ca, { uris: [clientId] });
  const files = await CertFiles.create();
  const mtls = [
    "--cacert",
    await files.write("roots.pem", ca.pem),
    ...await files.client("sleep", clientLeaf),
  ];
  return { ca, clientLeaf, cert: certificateInfo(serverLeaf, ca, serverId), mtls, files };
}

export * from "./raw_conn_test_support.ts";
export * from "./upstream_apps_test_support.ts";
