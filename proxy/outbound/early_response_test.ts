/**
 * An application that answers before it has read the request body, through the HTTP/1.1 pair in one
 * process, as raw bytes: client → outbound listener → STRICT mutual TLS → inbound listener → a raw TCP
 * application that answers 200 as soon as it has the request head and then keeps, ends or resets its
 * connection. As Envoy's connection manager does for a response before the request is complete, each
 * sidecar forwards the answer as is with `connection: close` and closes the connection after it; a
 * keep-alive head there let the client sidecar pool a mesh connection the server sidecar was closing
 * (503s and EOFs under load with 20 KB POSTs). The cases that send the whole body check that only 200s
 * come back (the race itself needs load: tests/bench/proxy_ab with AB_POST_BYTES).
 */
import assert from "node:assert/strict";
import net from "node:net";
import { InboundListener } from "../inbound/listener.ts";
import {
  certificateInfo,
  makeCa,
  makeLeaf,
  RawConn,
  RecordingLog,
  snapshotOf,
} from "../inbound/test_support.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import { OutboundListener } from "./listener.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/app";
const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";
const ca = await makeCa("Mesh Root CA");
const serverCert = certificateInfo(
  await makeLeaf(ca, { uris: [SERVER_ID], ips: ["127.0.0.1"] }),
  ca,
  SERVER_ID,
);
const clientLeaf = await makeLeaf(ca, { uris: [CLIENT_ID] });
const clientCert = certificateInfo(clientLeaf, ca, CLIENT_ID);

/** How the application ends its connection after the answer (it never reads the body). */
type Ending = "keep" | "end" | "destroy";

const ANSWER = "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\nearly response";

async function withPair(
  ending: Ending,
  fn: (ctx: { outboundPort: number; inboundPort: number }) => Promise<void>,
): Promise<void> {
  const sockets = new Set<net.Socket>();
  const app = net.createServer((sock) => {
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    sock.on("error", () => {});
    let head = "";
    const onData = (d: Uint8Array) => {
      head += new TextDecoder("latin1").decode(d);
      if (!head.includes("\r\n\r\n")) return;
      sock.off("data", onData);
      // Stop reading: the body stays in the kernel, so a close answers the proxy's writes with a reset.
      sock.pause();
      sock.write(ANSWER);
      if (ending === "end") sock.end();
      else if (ending === "destroy") sock.destroy();
    };
    sock.on("data", onData);
  });
  await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", () => resolve()));
  const appPort = (app.address() as net.AddressInfo).port;
  const inbound = new InboundListener({
    address: "127.0.0.1",
    port: 0,
    appAddress: "127.0.0.1",
    appPort,
    snapshot: () => snapshotOf("STRICT", serverCert),
    log: new RecordingLog(),
  });
  await inbound.start();
  const base = snapshotOf("PERMISSIVE", clientCert);
  const snapshot: RuntimeSnapshot = {
    ...base,
    workload: { ...base.workload!, name: "sleep", serviceAccount: "sleep", namespace: "foo" },
    services: {
      "foo/app": {
        name: "app",
        namespace: "foo",
        hosts: ["app.foo.svc.cluster.local"],
        addresses: [],
        ports: [{ name: "http", number: 8000, targetPort: 8000, protocol: "HTTP" }],
        endpoints: [{
          workload: "app",
          address: "127.0.0.1",
          ports: { "8000": inbound.port },
          proxied: true,
          identity: SERVER_ID,
          labels: {},
        }],
        location: "MESH_INTERNAL",
        resolution: "STATIC",
      },
    },
  };
  const outbound = new OutboundListener({
    address: "127.0.0.1",
    port: 0,
    snapshot: () => snapshot,
    log: new RecordingLog(),
  });
  await outbound.start();
  try {
    await fn({ outboundPort: outbound.port, inboundPort: inbound.port });
  } finally {
    await outbound.close();
    await inbound.close();
    for (const s of sockets) s.destroy();
    await within(new Promise<void>((resolve) => app.close(() => resolve())), 5000, "the application closed");
  }
}

const POST = "POST / HTTP/1.1\r\nHost: app.foo.svc.cluster.local:8000\r\nContent-Length: 20000\r\n\r\n";
const ENDINGS: readonly Ending[] = ["keep", "end", "destroy"];

/** The early answer as it must arrive: whole, saying Connection: close, then the close. */
async function assertEarlyAnswer(c: RawConn, what: string): Promise<void> {
  const r = await c.response();
  assert.equal(r.status, 200, `${what}: ${r.status} ${r.body}`);
  assert.equal(r.body, "early response", what);
  assert.equal(
    r.headers.connection,
    "close",
    `${what}: the rest of the body is not drained, so the head says close`,
  );
  assert.ok(await c.closed(), `${what}: the connection closes after the answer`);
  c.close();
}

for (const ending of ENDINGS) {
  Deno.test(`client sidecar: an answer while the body is still coming says Connection: close (app: ${ending})`, async () => {
    await withPair(ending, async ({ outboundPort }) => {
      const c = await RawConn.plain(outboundPort);
      c.write(POST + "x".repeat(1000)); // 19,000 bytes of the body never come
      await assertEarlyAnswer(c, "through the pair");
    });
  });

  Deno.test(`server sidecar: an answer while the body is still coming says Connection: close (app: ${ending})`, async () => {
    await withPair(ending, async ({ inboundPort }) => {
      // What the client sidecar sends: mutual TLS with the mesh ALPN.
      const c = await RawConn.tls(inboundPort, {
        ca: ca.pem,
        cert: clientLeaf.certPem,
        key: clientLeaf.keyPem,
      });
      c.write(POST + "x".repeat(1000));
      await assertEarlyAnswer(c, "from the server sidecar");
    });
  });
}

for (const ending of ["end", "destroy"] as const) {
  Deno.test(`the whole 20 KB body sent, the app answers unread and ${ending}s: 200s only`, async () => {
    await withPair(ending, async ({ outboundPort }) => {
      const counts: Record<string, number> = {};
      let c = await RawConn.plain(outboundPort);
      for (let i = 0; i < 40; i++) {
        c.write(POST + "x".repeat(20000));
        const r = await c.response();
        const key = `${r.status} ${r.body}`;
        counts[key] = (counts[key] ?? 0) + 1;
        if (r.headers.connection === "close") {
          c.close();
          c = await RawConn.plain(outboundPort);
        }
      }
      c.close();
      assert.deepEqual(counts, { "200 early response": 40 });
    });
  });
}
