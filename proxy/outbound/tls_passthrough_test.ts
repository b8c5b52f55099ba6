/**
 * TLS passthrough with real parts: an application's own TLS server (node:tls, its own CA and
 * certificate), a stand-in for the server's sidecar that requires the mesh's mutual TLS and relays
 * what is inside to the application, the outbound listener as a sidecar and as a gateway with a
 * PASSTHROUGH server, and real curl verifying the application's certificate with the application's CA.
 */
import assert from "node:assert/strict";
import net from "node:net";
import tls from "node:tls";
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
import { OutboundListener } from "./listener.ts";
import { OutboundStats } from "./outbound_stats.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { TlsPassthrough } from "./tls_passthrough.ts";
import { uriSans } from "./endpoint_pool.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/nginx";
const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";
const mesh = await makeCa("Mesh Root CA");
const appCa = await makeCa("example Inc.");
const appCaFile = await Deno.makeTempFile({ suffix: ".pem" });
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
function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port))
  );
}

/** The application: its own TLS, one HTTP/1.1 answer per connection. */
function appServer(): tls.Server {
  return tls.createServer({ key: appLeaf.keyPem, cert: appLeaf.certPem }, (s) => {
    s.on("error", () => {});
    s.once("data", () => s.end("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"));
  });
}

/** The server's sidecar, standing in: the mesh's mutual TLS, then the bytes inside relayed to the app. */
function peerSidecar(appPort: number, seen: string[]): tls.Server {
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

function endpoint(port: number, servicePort: number, proxied: boolean): EndpointInfo {
  return {
    workload: `w${port}`,
    address: "127.0.0.1",
    ports: { [String(servicePort)]: port },
    proxied,
    identity: proxied ? SERVER_ID : "",
    labels: {},
  };
}

function service(
  name: string,
  hosts: string[],
  ports: [number, string][],
  endpoints: EndpointInfo[],
): ServiceInfo {
  return {
    name,
    namespace: "foo",
    hosts,
    addresses: [],
    ports: ports.map(([number, protocol]) => ({
      name: protocol.toLowerCase(),
      number,
      targetPort: number,
      protocol,
    })),
    endpoints,
    location: "MESH_INTERNAL",
    resolution: "STATIC",
  };
}

const PASSTHROUGH: RouteConfiguration = {
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

interface World {
  snapshot: RuntimeSnapshot;
  seen: string[];
  log: RecordingLog;
}

async function withWorld(fn: (w: World) => Promise<void>): Promise<void> {
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

async function withListener(
  snapshot: () => RuntimeSnapshot,
  log: RecordingLog,
  routeNames: string[] | undefined,
  fn: (port: number) => Promise<void>,
): Promise<void> {
  const listener = new OutboundListener({ address: "127.0.0.1", port: 0, snapshot, log, routeNames });
  await listener.start();
  try {
    await fn(listener.port);
  } finally {
    await listener.close();
  }
}

/**
 * A sidecar's {@link TlsPassthrough} as ./tcp_forward.ts drives it, without capture: each accepted
 * connection is given to `take`; `fallbacks` counts the connections handed back.
 */
async function withSidecar(
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
async function eventuallyCounted(stats: OutboundStats, name: string): Promise<Record<string, number>> {
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
async function assertResetAtOnce(result: ReturnType<typeof curl>): Promise<void> {
  const r = await result;
  assert.ok([7, 35].includes(r.code), `curl exit ${r.code}: ${r.stderr}`);
}

/** curl https://<sni>:<port>/ to 127.0.0.1, verifying the app's certificate with its CA (verbose). */
function curlTls(sni: string, port: number): ReturnType<typeof curl> {
  return curl([
    "-v",
    "--cacert",
    appCaFile,
    "--resolve",
    `${sni}:${port}:127.0.0.1`,
    `https://${sni}:${port}/`,
  ]);
}

/** Original destination unknown (no capture): the connection, sniffed as TLS, is routed by SNI alone. */
const bySniAlone = (pt: TlsPassthrough, raw: net.Socket, fallback: () => void) =>
  pt.bySni(raw, undefined, fallback);

Deno.test("sidecar by SNI alone: the app's own TLS inside mutual TLS to a proxied endpoint, plain to others", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    await withSidecar(() => snapshot, log, bySniAlone, async (port) => {
      for (const sni of ["secure.foo.svc.cluster.local", "secure.foo"]) {
        const r = await curlTls(sni, port);
        assert.equal(r.code, 0, `${sni}: ${r.stderr}`);
        assert.equal(r.stdout, "hello");
        assert.match(r.stderr, /subject: CN=nginx\.example\.com; O=some organization/);
        assert.match(r.stderr, /SSL certificate verify ok/);
      }
      assert.deepEqual(seen, [CLIENT_ID, CLIENT_ID], "the peer sidecar saw the proxy's SPIFFE ID");
      // Plain TCP to an unproxied endpoint; a ServiceEntry wildcard host.
      for (const sni of ["plain.foo", "api.wild.test"]) {
        const r = await curlTls(sni, port);
        assert.equal(r.code, 0, `${sni}: ${r.stderr}`);
        assert.equal(r.stdout, "hello");
      }
      assert.equal(seen.length, 2, "no mutual TLS to unproxied endpoints");
    });
  });
});

Deno.test("sidecar by SNI alone: an unknown SNI, a service with two TLS ports, or no mTLS certificate: reset", async () => {
  await withWorld(async ({ snapshot, log }) => {
    let snap = snapshot;
    await withSidecar(() => snap, log, bySniAlone, async (port) => {
      for (const sni of ["nothing.example", "wild.test", "two.foo"]) {
        const r = await curl(["--resolve", `${sni}:${port}:127.0.0.1`, "-k", `https://${sni}:${port}/`]);
        assert.equal(r.code, 35, `${sni}: ${r.stderr}`);
        assert.match(r.stderr, /reset by peer|SSL_ERROR_SYSCALL/, sni);
      }
      assert.ok(log.entries.some((e) => /no single TLS port/.test(String(e.fields?.reason))));
      snap = { ...snapshot, certificate: undefined };
      assert.equal((await curlTls("secure.foo", port)).code, 35);
      assert.ok(log.entries.some((e) => /no workload certificate yet/.test(String(e.fields?.reason))));
    });
  });
});

Deno.test("sidecar, captured to an unknown address: only hosts without addresses are routed by SNI", async () => {
  await withWorld(async ({ snapshot, log }) => {
    let destination = { address: "192.0.2.1", port: 443 };
    let taken = 0;
    const take = (pt: TlsPassthrough, raw: net.Socket, fallback: () => void) => {
      if (pt.bySni(raw, destination, fallback)) taken++;
      else fallback();
    };
    await withSidecar(() => snapshot, log, take, async (port, fallbacks, stats) => {
      const r = await curlTls("api.wild.test", port);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "hello");
      assert.equal(fallbacks(), 0);
      // Envoy's tcp_proxy statistics of the route's cluster (the relay has ended once curl has its answer).
      const counters = await eventuallyCounted(
        stats,
        "tcp.outbound|443||*.wild.test.downstream_cx_tx_bytes_total",
      );
      assert.equal(counters["tcp.outbound|443||*.wild.test.downstream_cx_total"], 1);
      assert.ok(
        counters["tcp.outbound|443||*.wild.test.downstream_cx_rx_bytes_total"] > 100,
        "the ClientHello and more",
      );
      // A service with an address is reached by its address, not by SNI; an unknown SNI: fallback.
      for (const [i, sni] of ["secure.foo", "nothing.example"].entries()) {
        assert.equal((await curlTls(sni, port)).code, 35);
        assert.equal(fallbacks(), i + 1, sni);
      }
      assert.equal(taken, 3, "port 443 has an SNI-routed host: every connection was sniffed");
      // No host without addresses has port 8443: not even sniffed (a server-first protocol is not delayed).
      destination = { address: "192.0.2.1", port: 8443 };
      await assertResetAtOnce(curlTls("plain.foo", port));
      assert.deepEqual([taken, fallbacks()], [3, 3]);
    });
  });
});

Deno.test("sidecar, captured to a service address: a DNS ServiceEntry without endpoints is dialled by name", async () => {
  await withWorld(async ({ snapshot, log }) => {
    const targetOf = (key: string) => {
      const service = snapshot.services[key];
      return { key, service, port: service.ports[service.ports.length - 1], cluster: `outbound||${key}` };
    };
    let key = "foo/dns";
    await withSidecar(() => snapshot, log, (pt, raw, fallback) => {
      if (!pt.service(raw, targetOf(key))) fallback();
    }, async (port, fallbacks) => {
      const r = await curlTls("api.wild.test", port);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "hello");
      // A service with endpoints is the caller's (opaque TCP to an endpoint).
      key = "foo/secure";
      await assertResetAtOnce(curlTls("secure.foo", port));
      assert.equal(fallbacks(), 1);
    });
  });
});

Deno.test("gateway PASSTHROUGH: the SNI's route to the service, the app's certificate end to end; other SNI reset", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    const gw = { ...snapshot, routes: { [PASSTHROUGH.name]: PASSTHROUGH } };
    await withListener(() => gw, log, [PASSTHROUGH.name], async (port) => {
      const r = await curlTls("nginx.example.com", port);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "hello");
      assert.match(r.stderr, /subject: CN=nginx\.example\.com; O=some organization/);
      assert.deepEqual(seen, [CLIENT_ID]);
      const other = await curl([
        "--resolve",
        `other.example.com:${port}:127.0.0.1`,
        "-k",
        `https://other.example.com:${port}/`,
      ]);
      assert.equal(other.code, 35, other.stderr);
      const noSni = await curl(["-k", `https://127.0.0.1:${port}/`]);
      assert.equal(noSni.code, 35, "no SNI: no route");
    });
  });
});

Deno.test("gateway PASSTHROUGH: the gateway's AuthorizationPolicies apply as TCP rules", async () => {
  await withWorld(async ({ snapshot, log }) => {
    const policies: Record<string, Record<string, unknown>>[] = [];
    let i = 0;
    const gw = () => ({
      ...snapshot,
      routes: { [PASSTHROUGH.name]: PASSTHROUGH },
      authorizations: policies[i],
    });
    await withListener(gw, log, [PASSTHROUGH.name], async (port) => {
      const allow = (ipBlocks: string[]) => ({
        "foo/allow": {
          namespace: "foo",
          name: "allow",
          action: "ALLOW",
          rules: [{ from: [{ source: { ipBlocks } }] }],
        },
      });
      policies.push(
        allow(["127.0.0.0/8"]),
        allow(["10.0.0.0/8"]),
        {
          "foo/deny": {
            namespace: "foo",
            name: "deny",
            action: "DENY",
            rules: [{ to: [{ operation: { ports: [String(port)] } }] }],
          },
        },
        // An ALLOW rule with HTTP-only fields never matches a TCP connection: denied.
        {
          "foo/paths": {
            namespace: "foo",
            name: "paths",
            action: "ALLOW",
            rules: [{ to: [{ operation: { paths: ["/"] } }] }],
          },
        },
      );
      const want = [0, 35, 35, 35];
      for (; i < policies.length; i++) {
        const r = await curlTls("nginx.example.com", port);
        assert.equal(r.code, want[i], `policy ${i}: ${r.stderr}`);
      }
      assert.ok(log.entries.some((e) => /denied by foo\/deny rule 0/.test(String(e.fields?.reason))));
    });
  });
});
