import assert from "node:assert/strict";
import net from "node:net";
import tls from "node:tls";
import { Buffer } from "node:buffer";
import { relay, type RelayOptions, type RelayResult } from "./relay.ts";
import { makeCa, makeLeaf } from "../inbound/test_support.ts";
import { collect, sha256Hex } from "./test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port))
  );
}

function close(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * A client, a relaying proxy and a server on loopback: `client` is connected to the proxy, `server`
 * is the accepted socket at the upstream, and `result` settles when the relay ends.
 */
interface Pair {
  client: net.Socket;
  server: net.Socket;
  result: Promise<RelayResult>;
  stop(): Promise<void>;
}

async function pair(options: RelayOptions = {}): Promise<Pair> {
  const serverSide = Promise.withResolvers<net.Socket>();
  const upstreamServer = net.createServer({ allowHalfOpen: true }, (s) => serverSide.resolve(s));
  const upstreamPort = await listen(upstreamServer);
  const relayed = Promise.withResolvers<RelayResult>();
  const proxy = net.createServer({ allowHalfOpen: true }, (down) => {
    const up = net.connect({ host: "127.0.0.1", port: upstreamPort, allowHalfOpen: true });
    up.once("connect", () => relayed.resolve(relay(down, up, options)));
  });
  const proxyPort = await listen(proxy);
  const client = net.connect({ host: "127.0.0.1", port: proxyPort, allowHalfOpen: true });
  const server = await within(serverSide.promise, 5000, "upstream accept");
  return {
    client,
    server,
    result: relayed.promise,
    stop: () => Promise.all([close(proxy), close(upstreamServer)]).then(() => {}),
  };
}

function random(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  return out;
}

Deno.test("relay: 8 MiB each way at once, byte for byte, then closed", async () => {
  const p = await pair();
  const up = random(8 << 20);
  const down = random(8 << 20);
  const atServer = collect(p.server);
  const atClient = collect(p.client);
  p.client.end(up);
  p.server.end(down);
  const [s, c, r] = await within(Promise.all([atServer, atClient, p.result]), 30_000, "transfer");
  assert.equal(sha256Hex(s.bytes), sha256Hex(up));
  assert.equal(sha256Hex(c.bytes), sha256Hex(down));
  assert(s.ended && c.ended);
  assert.equal(r.end, "closed");
  assert.equal(r.bytesFromDownstream, up.byteLength);
  assert.equal(r.bytesFromUpstream, down.byteLength);
  await p.stop();
});

Deno.test("relay: half-close: the server still sends after the client shut its write side", async () => {
  const p = await pair();
  const atClient = collect(p.client);
  const serverGot: Uint8Array[] = [];
  p.server.on("data", (c: Uint8Array) => serverGot.push(c));
  p.server.on("end", () => {
    // The client's FIN arrived; this direction is still open.
    p.server.write("reply after your FIN, ");
    setTimeout(() => p.server.end("and more later"), 50);
  });
  p.client.end("request then FIN");
  const [c, r] = await within(Promise.all([atClient, p.result]), 5000, "half-close");
  assert.equal(new TextDecoder().decode(c.bytes), "reply after your FIN, and more later");
  assert.equal(new TextDecoder().decode(Buffer.concat(serverGot)), "request then FIN");
  assert.equal(r.end, "closed");
  assert.equal(r.by, "downstream");
  await p.stop();
});

Deno.test("relay: an upstream reset resets the client", async () => {
  const p = await pair();
  const atClient = collect(p.client);
  p.server.once("data", () => p.server.resetAndDestroy());
  p.client.write("hello");
  const [c, r] = await within(Promise.all([atClient, p.result]), 5000, "reset");
  assert.equal(c.error, "ECONNRESET");
  assert.equal(r.end, "reset");
  assert.equal(r.by, "upstream");
  await p.stop();
});

Deno.test("relay: a client reset resets the upstream", async () => {
  const p = await pair();
  const atServer = collect(p.server);
  p.server.once("data", () => p.client.resetAndDestroy());
  p.client.write("hello");
  const [s, r] = await within(Promise.all([atServer, p.result]), 5000, "reset");
  assert.equal(s.error, "ECONNRESET");
  assert.equal(r.end, "reset");
  assert.equal(r.by, "downstream");
  await p.stop();
});

Deno.test("relay: idle timeout closes both sides; traffic keeps the relay alive", async () => {
  const p = await pair({ idleTimeoutMs: 300 });
  const atClient = collect(p.client, true);
  const atServer = collect(p.server, true);
  // Four bytes 150 ms apart (450 ms > the 300 ms timeout): each resets the idle clock, so all arrive.
  for (let i = 0; i < 4; i++) {
    p.client.write("x");
    await new Promise((r) => setTimeout(r, 150));
  }
  const [c, s, r] = await within(Promise.all([atClient, atServer, p.result]), 5000, "idle timeout");
  assert.equal(new TextDecoder().decode(s.bytes), "xxxx");
  assert.equal(c.bytes.byteLength, 0);
  assert.equal(r.end, "idle_timeout");
  assert.equal(r.by, "proxy");
  await p.stop();
});

Deno.test("relay: abort closes both sides", async () => {
  const ac = new AbortController();
  const p = await pair({ signal: ac.signal });
  const atClient = collect(p.client, true);
  const atServer = collect(p.server, true);
  ac.abort();
  const [, , r] = await within(Promise.all([atClient, atServer, p.result]), 5000, "abort");
  assert.equal(r.end, "aborted");
  await p.stop();
});

/**
 * Mutual TLS between the client and the relay, and (with `tlsUpstream`) TLS between the relay and the
 * server: 16 MiB each way at once, the client half-closes first, the server ends after that.
 */
async function tlsTransfer(tlsUpstream: boolean): Promise<void> {
  const ca = await makeCa("relay test CA");
  const serverLeaf = await makeLeaf(ca, { dnsNames: ["localhost"] });
  const clientLeaf = await makeLeaf(ca, { uris: ["spiffe://cluster.local/ns/a/sa/client"] });
  const serverSide = Promise.withResolvers<net.Socket>();
  const serverTls = { cert: serverLeaf.certPem, key: serverLeaf.keyPem, ca: ca.pem, allowHalfOpen: true };
  const upstreamServer = tlsUpstream
    ? tls.createServer(serverTls, (s) => serverSide.resolve(s))
    : net.createServer({ allowHalfOpen: true }, (s) => serverSide.resolve(s));
  const upstreamPort = await listen(upstreamServer);
  const relayed = Promise.withResolvers<RelayResult>();
  const connectTls = (port: number): tls.TLSSocket =>
    tls.connect({
      socket: net.connect({ host: "127.0.0.1", port, allowHalfOpen: true }),
      servername: "localhost",
      ca: ca.pem,
      cert: clientLeaf.certPem,
      key: clientLeaf.keyPem,
    });
  const front = tls.createServer({ ...serverTls, requestCert: true, rejectUnauthorized: true }, (down) => {
    if (tlsUpstream) {
      const up = connectTls(upstreamPort);
      up.once("secureConnect", () => relayed.resolve(relay(down, up)));
    } else {
      const up = net.connect({ host: "127.0.0.1", port: upstreamPort, allowHalfOpen: true });
      up.once("connect", () => relayed.resolve(relay(down, up)));
    }
  });
  const client = connectTls(await listen(front));
  const server = await within(serverSide.promise, 5000, "upstream accept");
  const up = random(16 << 20);
  const down = random(16 << 20);
  const atServer = collect(server);
  const atClient = collect(client);
  server.write(down);
  server.on("end", () => server.end());
  client.end(up);
  const [s, c, r] = await within(Promise.all([atServer, atClient, relayed.promise]), 30_000, "TLS transfer");
  assert.equal(sha256Hex(s.bytes), sha256Hex(up));
  assert.equal(sha256Hex(c.bytes), sha256Hex(down));
  assert.equal(r.end, "closed");
  assert.equal(r.by, "downstream");
  await Promise.all([close(front), close(upstreamServer)]);
}

Deno.test("relay: mutual TLS downstream, plain upstream: 16 MiB each way, half-close", () =>
  tlsTransfer(false));

Deno.test("relay: mutual TLS downstream, TLS upstream: 16 MiB each way, half-close", () => tlsTransfer(true));
