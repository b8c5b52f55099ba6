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
      "foo/secure": service("secure", ["secure.foo.svc.cluster.local"], [[80, "HTTP"], [443, "HTTPS"]], [
        { ...endpoint(peerPort, 443, true), ports: { "80": 1, "443": peerPort } },
      ]),
      "foo/plain": service("plain", ["plain.foo.svc.cluster.local"], [[8443, "TLS"]], [
        endpoint(appPort, 8443, false),
      ]),
      "foo/wild": {
        ...service("wild", ["*.wild.test"], [[443, "TLS"]], [endpoint(appPort, 443, false)]),
        location: "MESH_EXTERNAL",
      },
      "foo/two": service("two", ["two.foo.svc.cluster.local"], [[8443, "TLS"], [9443, "TLS"]], [
        endpoint(appPort, 8443, false),
      ]),
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

Deno.test("sidecar: the app's own TLS passes through by SNI, inside mutual TLS to a proxied endpoint", async () => {
  await withWorld(async ({ snapshot, seen, log }) => {
    await withListener(() => snapshot, log, undefined, async (port) => {
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

Deno.test("sidecar: an unknown SNI, a service with two TLS ports, or no mTLS certificate: reset", async () => {
  await withWorld(async ({ snapshot, log }) => {
    let snap = snapshot;
    await withListener(() => snap, log, undefined, async (port) => {
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
