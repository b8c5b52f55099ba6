/**
 * Backpressure through the mesh's TCP path in miniature: a sender pushes 256 MiB through an
 * "outbound" relay (plain downstream, mutual TLS upstream) and an "inbound" relay (mutual TLS
 * downstream, plain upstream) to a receiver that does not read at first. The proxy must stop reading
 * (the bytes wait in the kernel's socket buffers and at the sender) instead of buffering them; once the
 * receiver reads, the transfer completes byte for byte. Fails when the relay ignores `write()`
 * returning false, or pauses a TLSSocket with a plain `pause()` (Deno 2.9's TLS layer keeps reading).
 */
import assert from "node:assert/strict";
import net from "node:net";
import tls from "node:tls";
import { createHash, randomBytes } from "node:crypto";
import { relay, type RelayResult } from "./relay.ts";
import { makeCa, makeLeaf } from "../inbound/test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const MiB = 1 << 20;
const TOTAL = 256 * MiB;
const BLOCK = MiB;
/** What the kernel can hold between sender and receiver while no one reads (three loopback connections). */
const IN_FLIGHT_BOUND = 64 * MiB;
/** What the relays' own sockets may hold in user space (stream buffers, a chunk or two each). */
const PROXY_BUFFER_BOUND = 4 * MiB;

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port))
  );
}

function close(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Block `i` of the stream: a random block whose first 4 bytes are its index, so that order shows. */
function blockOf(base: Uint8Array, i: number): Uint8Array {
  const b = base.slice();
  new DataView(b.buffer).setUint32(0, i);
  return b;
}

/** Bytes waiting in a socket's stream buffers (and, for a server TLSSocket, in the socket it wraps). */
function buffered(s: net.Socket): number {
  const parent = (s as unknown as { _parent?: net.Socket | null })._parent;
  return s.readableLength + s.writableLength + (parent ? parent.readableLength + parent.writableLength : 0);
}

/** Polls `measure` every 100 ms until it has not changed for 1 s; returns its last value. */
async function settled(measure: () => number): Promise<number> {
  let last = -1;
  let still = 0;
  while (still < 10) {
    await new Promise((r) => setTimeout(r, 100));
    const now = measure();
    still = now === last ? still + 1 : 0;
    last = now;
  }
  return last;
}

Deno.test("relay backpressure: 256 MiB through outbound and inbound mutual TLS to a stalled receiver", async () => {
  const ca = await makeCa("backpressure test CA");
  const serverLeaf = await makeLeaf(ca, { dnsNames: ["localhost"] });
  const clientLeaf = await makeLeaf(ca, { uris: ["spiffe://cluster.local/ns/a/sa/client"] });
  const proxySockets: net.Socket[] = [];
  const results: Promise<RelayResult>[] = [];
  const track = (down: net.Socket, up: net.Socket, ready: string): void => {
    proxySockets.push(down, up);
    const r = Promise.withResolvers<RelayResult>();
    up.once(ready, () => r.resolve(relay(down, up)));
    results.push(r.promise);
  };

  const receiverSide = Promise.withResolvers<net.Socket>();
  const app = net.createServer({ allowHalfOpen: true }, (s) => {
    s.pause();
    receiverSide.resolve(s);
  });
  const appPort = await listen(app);
  const inbound = tls.createServer(
    {
      cert: serverLeaf.certPem,
      key: serverLeaf.keyPem,
      ca: ca.pem,
      requestCert: true,
      rejectUnauthorized: true,
      allowHalfOpen: true,
    },
    (down) => track(down, net.connect({ host: "127.0.0.1", port: appPort, allowHalfOpen: true }), "connect"),
  );
  const inboundPort = await listen(inbound);
  const outbound = net.createServer({ allowHalfOpen: true }, (down) =>
    track(
      down,
      tls.connect({
        socket: net.connect({ host: "127.0.0.1", port: inboundPort, allowHalfOpen: true }),
        servername: "localhost",
        ca: ca.pem,
        cert: clientLeaf.certPem,
        key: clientLeaf.keyPem,
      }),
      "secureConnect",
    ));
  const sender = net.connect({ host: "127.0.0.1", port: await listen(outbound), allowHalfOpen: true });
  const receiver = await within(receiverSide.promise, 10_000, "the receiver's accept");

  const base = new Uint8Array(randomBytes(BLOCK));
  const sent = createHash("sha256");
  let handed = 0;
  let next = 0;
  const pump = (): void => {
    while (next < TOTAL / BLOCK) {
      const b = blockOf(base, next++);
      sent.update(b);
      handed += b.byteLength;
      if (!sender.write(b)) return void sender.once("drain", pump);
    }
    sender.end();
  };
  if (sender.connecting) sender.once("connect", pump);
  else pump();
  const senderDone = new Promise<void>((r) => sender.once("finish", r));

  // Nobody reads at the receiver: the bytes the sender got rid of stop growing, and what is in flight
  // is what the kernel's buffers hold, not the proxy.
  const inFlight = await within(settled(() => handed - sender.writableLength), 60_000, "the stall");
  const inProxy = proxySockets.reduce((n, s) => n + buffered(s), 0);
  assert.ok(
    inFlight <= IN_FLIGHT_BOUND,
    `${(inFlight / MiB).toFixed(1)} MiB left the sender while the receiver read nothing (bound ${
      IN_FLIGHT_BOUND / MiB
    } MiB): something buffers without backpressure`,
  );
  assert.ok(inProxy <= PROXY_BUFFER_BOUND, `${inProxy} bytes in the relays' socket buffers`);

  const got = createHash("sha256");
  let received = 0;
  receiver.on("data", (c: Uint8Array) => {
    got.update(c);
    received += c.byteLength;
  });
  const receiverEnded = new Promise<void>((r) => receiver.once("end", r));
  receiver.resume();
  await within(Promise.all([senderDone, receiverEnded]), 120_000, "the transfer after the stall");
  receiver.end();
  sender.on("end", () => sender.destroy());
  const [o, i] = await within(Promise.all(results), 10_000, "both relays' end");
  assert.equal(received, TOTAL);
  assert.equal(got.digest("hex"), sent.digest("hex"));
  for (const r of [o, i]) {
    assert.equal(r.end, "closed");
    assert.equal(r.bytesFromDownstream, TOTAL);
  }
  await new Promise<void>((r) => sender.destroyed ? r() : sender.once("close", () => r()));
  await Promise.all([close(outbound), close(inbound), close(app)]);
});
