/**
 * Fixtures of the TLS passthrough tests: an application's own TLS server (node:tls, its own CA and
 * certificate), a stand-in for the server's sidecar that requires the mesh's mutual TLS and relays what
 * is inside to the application, a runtime snapshot with services of each kind, the outbound listener
 * (sidecar or gateway) or a bare {@link TlsPassthrough} around them, and real curl as the client.
 *
 * @module
 */
import assert from "node:assert/strict";
import net from "node:net";
import tls from "node:tls";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import {
  certificateInfo,
  curl,
  makeCa,
  makeLeaf,
  RecordingLog,
  snapshotOf,
} from "../inbound/test_support.ts";
import type { EndpointInfo, RouteConfiguration, RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import { relay } from "../tcp/relay.ts";
import { passthroughTls } from "../../shared/routing/mod.ts";
import { OutboundListener, type OutboundListenerOptions } from "./listener.ts";
import { OutboundStats } from "./outbound_stats.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { TlsPassthrough } from "./tls_passthrough.ts";
import { uriSans } from "./endpoint_pool.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

export const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/nginx";
export const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";
const mesh = await makeCa("Mesh Root CA");
const appCa = await makeCa("example Inc.");
export const appCaFile = await Deno.makeTempFile({ suffix: ".pem" });
await Deno.writeTextFile(appCaFile, appCa.pem);
const APP_NAMES = [
  "secure.foo.svc.cluster.local",
  "secure.foo",
  "plain.foo",
  "api.wild.test",
  "nginx.example.com",
];
const appLeaf = await makeLeaf(appCa, {
  dnsNames: APP_NAMES,
  subject: "CN=nginx.example.com, O=some organization",
});
const clientCert = certificateInfo(await makeLeaf(mesh, { uris: [CLIENT_ID] }), mesh, CLIENT_ID);
const serverCert = certificateInfo(await makeLeaf(mesh, { uris: [SERVER_ID] }), mesh, SERVER_ID);

/** Listens on 127.0.0.1:0; resolves with the port. */
export function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port))
  );
}

/**
 * The application: its own TLS, one HTTP/1.1 answer per connection: `hello`, or for a request with a
 * body, the body's SHA-256 in hex.
 */
export function appServer(): tls.Server {
  return tls.createServer({ key: appLeaf.keyPem, cert: appLeaf.certPem }, (s) => {
    s.on("error", () => {});
    let head = Buffer.alloc(0);
    let need = -1, got = 0;
    const hash = createHash("sha256");
    s.on("data", (d: Buffer) => {
      let body = d;
      if (need < 0) {
        head = Buffer.concat([head, d]);
        const end = head.indexOf("\r\n\r\n");
        if (end < 0) return;
        need = Number(/content-length:\s*(\d+)/i.exec(head.subarray(0, end).toString())?.[1] ?? 0);
        body = head.subarray(end + 4);
      }
      hash.update(body);
      got += body.length;
      if (got < need) return;
      // A request with a body is answered with the SHA-256 of what arrived: byte for byte, or not.
      const answer = need === 0 ? "hello" : hash.digest("hex");
      s.end(`HTTP/1.1 200 OK\r\nContent-Length: ${answer.length}\r\nConnection: close\r\n\r\n${answer}`);
    });
  });
}

/** The server's sidecar, standing in: the mesh's mutual TLS, then the bytes inside relayed to the app. */
export function peerSidecar(appPort: number, seen: string[]): tls.Server {
  return tls.createServer({
    key: serverCert.privateKeyPem,
    cert: serverCert.certChainPem,
    ca: mesh.pem,
    requestCert: true,
    rejectUnauthorized: true,
    allowHalfOpen: true,
  }, (s) => {
    seen.push(...uriSans(s.getPeerCertificate()?.subjectaltname));
    const app = net.connect({ host: "127.0.0.1", port: appPort, allowHalfOpen: true });
    app.once("connect", () => relay(s, app));
    app.once("error", () => s.destroy());
  });
}

export function endpoint(port: number, servicePort: number, proxied: boolean): EndpointInfo {
  return endpointInfo({
    workload: `w${port}`,
    ports: { [String(servicePort)]: port },
    identity: proxied ? SERVER_ID : "",
  });
}

export function service(
  name: string,
  hosts: string[],
  ports: [number, string][],
  endpoints: EndpointInfo[],
): ServiceInfo {
  return serviceInfo({
    name,
    hosts,
    ports: ports.map(([number, protocol]) => ({ number, protocol })),
    endpoints,
  });
}

export const PASSTHROUGH: RouteConfiguration = {
  name: "tls.443.https.mygateway.foo",
  port: 443,
  bindPort: 0,
  gateways: ["foo/mygateway"],
  virtualHosts: [],
  tls: passthroughTls(["nginx.example.com"]),

  tlsRoutes: [{
    name: "foo/nginx.tls.0",
    sniHosts: ["nginx.example.com"],
    destinations: [{ host: "secure.foo.svc.cluster.local", port: 443, weight: 100 }],
  }],
};

export interface World {
  snapshot: RuntimeSnapshot;
  seen: string[];
  log: RecordingLog;
}

export async function withWorld(fn: (w: World) => Promise<void>): Promise<void> {
  const app = appServer(), seen: string[] = [];
  const appPort = await listen(app);
  const peer = peerSidecar(appPort, seen);
  const peerPort = await listen(peer);
  const base = snapshotOf("PERMISSIVE", clientCert);
  const snapshot: RuntimeSnapshot = {
    ...base,
    workload: { ...base.workload!, name: "sleep", serviceAccount: "sleep", namespace: "foo" },
    services: {
      "foo/secure": {
        ...service("secure", ["secure.foo.svc.cluster.local"], [[80, "HTTP"], [443, "HTTPS"]], [
          { ...endpoint(peerPort, 443, true), ports: { "80": 1, "443": peerPort } },
        ]),
        addresses: ["10.0.0.1"],
      },
      "foo/plain": {
        ...service("plain", ["plain.foo.svc.cluster.local"], [[8443, "TLS"]], [
          endpoint(appPort, 8443, false),
        ]),
        addresses: ["10.0.0.2"],
      },
      // A ServiceEntry with an address, resolution DNS and no endpoints: dialled by its host name.
      "foo/dns": {
        ...service("dns", ["127.0.0.1"], [[443, "TLS"]], []),
        addresses: ["10.0.0.3"],
        ports: [{ name: "tls", number: 443, targetPort: appPort, protocol: "TLS" }],
        resolution: "DNS",
      },
      "foo/wild": {
        ...service("wild", ["*.wild.test"], [[443, "TLS"]], [endpoint(appPort, 443, false)]),
        location: "MESH_EXTERNAL",
      },
      "foo/two": {
        ...service("two", ["two.foo.svc.cluster.local"], [[8443, "TLS"], [9443, "TLS"]], [
          endpoint(appPort, 8443, false),
        ]),
        addresses: ["10.0.0.4"],
      },
    },
  };
  try {
    await fn({ snapshot, seen, log: new RecordingLog() });
  } finally {
    await Promise.all([app, peer].map((s) => new Promise((r) => s.close(r))));
  }
}

export async function withListener(
  snapshot: () => RuntimeSnapshot,
  log: RecordingLog,
  routeNames: string[] | undefined,
  fn: (port: number, listener: OutboundListener) => Promise<void>,
  connectionLimits?: OutboundListenerOptions["connectionLimits"],
): Promise<void> {
  const listener = new OutboundListener({
    address: "127.0.0.1",
    port: 0,
    snapshot,
    log,
    routeNames,
    connectionLimits,
  });
  await listener.start();
  try {
    await fn(listener.port, listener);
  } finally {
    await listener.close();
  }
}

/**
 * A sidecar's {@link TlsPassthrough} as ./tcp_forward.ts drives it, without capture: each accepted
 * connection is given to `take`; `fallbacks` counts the connections handed back.
 */
export async function withSidecar(
  snapshot: () => RuntimeSnapshot,
  log: RecordingLog,
  take: (pt: TlsPassthrough, raw: net.Socket, fallback: () => void) => void,
  fn: (port: number, fallbacks: () => number, stats: OutboundStats) => Promise<void>,
): Promise<void> {
  const stats = new OutboundStats();
  const pt = new TlsPassthrough({ snapshot, log, observer: stats });
  let fallbacks = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (raw) => {
    sockets.add(raw);
    raw.once("close", () => sockets.delete(raw));
    raw.on("error", () => {});
    take(pt, raw, () => {
      fallbacks++;
      raw.resetAndDestroy();
    });
  });
  const port = await listen(server);
  try {
    await fn(port, () => fallbacks, stats);
  } finally {
    pt.close();
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  }
}

/** The counters once `name` is counted (the relay's end is counted after curl may have exited). */
export async function eventuallyCounted(stats: OutboundStats, name: string): Promise<Record<string, number>> {
  return await within(
    (async () => {
      while (!(stats.snapshot()[name] > 0)) await new Promise((r) => setTimeout(r, 10));
      return stats.snapshot();
    })(),
    5000,
    name,
  );
}

/** A connection the test's fallback resets as it is accepted: curl sees it before (exit 7) or after (35) its ClientHello. */
export async function assertResetAtOnce(result: ReturnType<typeof curl>): Promise<void> {
  const r = await result;
  assert.ok([7, 35].includes(r.code), `curl exit ${r.code}: ${r.stderr}`);
}

/** curl https://<sni>:<port>/ to 127.0.0.1, verifying the app's certificate with its CA (verbose). */
export function curlTls(sni: string, port: number): ReturnType<typeof curl> {
  return curl([
    "-v",
    "--cacert",
    appCaFile,
    "--resolve",
    `${sni}:${port}:127.0.0.1`,
    `https://${sni}:${port}/`,
  ]);
}
