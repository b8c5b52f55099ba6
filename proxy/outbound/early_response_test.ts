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
import { certificateInfo, makeCa, makeLeaf, RawConn } from "../inbound/test_support.ts";
import { CLIENT_ID, ECHO_HOST, ECHO_PORT, SERVER_ID, startPair } from "../h2proxy/mesh_pair_test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const ca = await makeCa("Mesh Root CA");
// The IP SAN lets a raw TLS client (node's default host check) talk to the server sidecar directly.
const serverLeaf = await makeLeaf(ca, { uris: [SERVER_ID], ips: ["127.0.0.1"] });
const clientLeaf = await makeLeaf(ca, { uris: [CLIENT_ID] });
const certs = {
  server: certificateInfo(serverLeaf, ca, SERVER_ID),
  client: certificateInfo(clientLeaf, ca, CLIENT_ID),
};

/** How the application ends its connection after the answer (it never reads the body). */
type Ending = "keep" | "end" | "destroy";

const ANSWER = "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\nearly response";

/** The application (raw TCP) behind the pair of ../h2proxy/mesh_pair_test_support.ts (port protocol HTTP). */
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
  const pair = await startPair(certs, (app.address() as net.AddressInfo).port, "HTTP");
  try {
    await fn({ outboundPort: pair.outbound.port, inboundPort: pair.inbound.port });
  } finally {
    await pair.stop();
    for (const s of sockets) s.destroy();
    await within(new Promise<void>((resolve) => app.close(() => resolve())), 5000, "the application closed");
  }
}

const POST = `POST / HTTP/1.1\r\nHost: ${ECHO_HOST}:${ECHO_PORT}\r\nContent-Length: 20000\r\n\r\n`;
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
