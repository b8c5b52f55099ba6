/**
 * A sidecar with `--meshTlsClient deno` (the outbound listener's `upstream.meshTls`) in front of a STRICT
 * inbound listener: requests reach the application over Deno's TLS client with the client's identity in
 * XFCC, a body of 200 KB is forwarded whole, a keep-alive client reuses one mesh connection, and an
 * endpoint whose certificate names another identity (502 identity_mismatch) or comes from another root
 * (502 tls_failure, in rustls's words) is refused. The node:tls
 * leg runs the same paths in listener_test.ts (the default).
 */
import assert from "node:assert/strict";
import { InboundListener } from "../inbound/listener.ts";
import type { InboundStats } from "../inbound/observer.ts";
import {
  certificateInfo,
  makeCa,
  makeLeaf,
  RawConn,
  RecordingLog,
  snapshotOf,
} from "../inbound/test_support.ts";
import type { RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";
import { OutboundListener } from "./listener.ts";
import { endpointInfo, serviceInfo } from "../runtime/snapshot_test_support.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/httpbin";
const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";
const ca = await makeCa("Mesh Root CA");
const serverCert = certificateInfo(await makeLeaf(ca, { uris: [SERVER_ID] }), ca, SERVER_ID);
const clientCert = certificateInfo(await makeLeaf(ca, { uris: [CLIENT_ID] }), ca, CLIENT_ID);
const foreignCa = await makeCa("Foreign Root CA");
const foreignCert = certificateInfo(await makeLeaf(foreignCa, { uris: [SERVER_ID] }), foreignCa, SERVER_ID);

function service(name: string, port: number, identity: string): ServiceInfo {
  const endpoint = endpointInfo({ workload: name, ports: { "8000": port }, identity, proxied: true });
  return serviceInfo({ name, ports: [{ number: 8000 }], endpoints: [endpoint] });
}

/** The app (XFCC and the body's length), a STRICT inbound listener, and a sidecar on Deno's TLS client. */
async function withMeshLeg(
  fn: (sidecarPort: number, inbound: InboundListener) => Promise<void>,
): Promise<void> {
  const app = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const length = (await req.arrayBuffer()).byteLength;
    return new Response(`${req.headers.get("x-forwarded-client-cert")}\n${length}`);
  });
  const strict = (cert: typeof serverCert) =>
    new InboundListener({
      address: "127.0.0.1",
      port: 0,
      appAddress: "127.0.0.1",
      appPort: app.addr.port,
      snapshot: () => snapshotOf("STRICT", cert),
      log: new RecordingLog(),
    });
  const inbound = strict(serverCert);
  // An endpoint with the right identity under another root: rustls's own error names the client.
  const foreign = strict(foreignCert);
  await Promise.all([inbound.start(), foreign.start()]);
  const snapshot: RuntimeSnapshot = {
    ...snapshotOf("PERMISSIVE", clientCert),
    services: {
      "foo/a": service("a", inbound.port, SERVER_ID),
      "foo/b": service("b", inbound.port, "spiffe://cluster.local/ns/foo/sa/other"),
      "foo/c": service("c", foreign.port, SERVER_ID),
    },
  };
  const sidecar = new OutboundListener({
    address: "127.0.0.1",
    port: 0,
    snapshot: () => snapshot,
    log: new RecordingLog(),
    upstream: { meshTls: "deno" },
  });
  await sidecar.start();
  try {
    await fn(sidecar.port, inbound);
  } finally {
    await sidecar.close();
    await Promise.all([inbound.close(), foreign.close()]);
    await app.shutdown();
  }
}

Deno.test("Deno TLS mesh leg: identity in XFCC, a 200 KB body, one reused connection, a wrong identity refused", async () => {
  await withMeshLeg(async (port, inbound) => {
    const c = await RawConn.plain(port);
    try {
      for (let i = 0; i < 3; i++) {
        c.write("GET / HTTP/1.1\r\nHost: a.foo:8000\r\n\r\n");
        const r = await c.response();
        assert.equal(r.status, 200);
        assert.match(r.body, new RegExp(`URI=${CLIENT_ID}`));
        assert.match(r.body, /\n0$/);
      }
      const body = "x".repeat(200_000);
      c.write(`POST /upload HTTP/1.1\r\nHost: a.foo:8000\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      const posted = await c.response();
      assert.equal(posted.status, 200);
      assert.match(posted.body, /\n200000$/);
      c.write("GET / HTTP/1.1\r\nHost: b.foo:8000\r\n\r\n");
      const refused = await c.response();
      assert.equal(refused.status, 502);
      assert.match(refused.body, /identity_mismatch.*expected spiffe:\/\/cluster\.local\/ns\/foo\/sa\/other/);
      c.write("GET / HTTP/1.1\r\nHost: c.foo:8000\r\n\r\n");
      const untrusted = await c.response();
      assert.equal(untrusted.status, 502);
      // rustls's words (node:tls says "unable to verify the first certificate"): Deno's client ran.
      assert.match(untrusted.body, /tls_failure.*UnknownIssuer/);
    } finally {
      c.close();
    }
    const stats = (inbound.observer as InboundStats).snapshot();
    // Four requests on one mesh connection, and the refused dial's handshake.
    assert.equal(stats.downstream_cx_mtls_total, 2);
  });
});
