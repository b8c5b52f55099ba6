/**
 * DenoConnIo on real loopback connections (Deno.connect, Deno.connectTls) against node:net and node:tls
 * peers: flow control on reading, the FIN after a pause, write backpressure, half-close, the lingering
 * close, errors, and chunks that stay intact while later reads arrive.
 */
import assert from "node:assert/strict";
import net from "node:net";
import tls from "node:tls";
import { DenoConnIo } from "./deno_conn_io.ts";
import { makeCa, makeLeaf } from "../inbound/test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

/** A node:net server on loopback whose accepted sockets are handed to the test. */
async function peerServer(): Promise<
  { port: number; accepted: () => Promise<net.Socket>; close: () => void }
> {
  const queue: net.Socket[] = [];
  const waiters: ((s: net.Socket) => void)[] = [];
  const all: net.Socket[] = [];
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    all.push(s);
    s.on("error", () => {});
    const w = waiters.shift();
    if (w !== undefined) w(s);
    else queue.push(s);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => {
      const s = queue.shift();
      if (s !== undefined) return Promise.resolve(s);
      return within(new Promise<net.Socket>((r) => waiters.push(r)), 5_000, "the accepted connection");
    },
    close: () => {
      for (const s of all) s.destroy();
      server.close();
    },
  };
}

/** A DenoConnIo (Deno.connect) and the node:net socket the server accepted for it; both closed after `fn`. */
async function withPeer(
  fn: (io: DenoConnIo, peer: net.Socket) => Promise<void>,
  highWater?: number,
): Promise<void> {
  const srv = await peerServer();
  const io = new DenoConnIo(await Deno.connect({ hostname: "127.0.0.1", port: srv.port }), highWater);
  try {
    await fn(io, await srv.accepted());
  } finally {
    io.destroy();
    srv.close();
  }
}

/** Reads `io` to its end as text. */
async function readText(io: DenoConnIo, what: string): Promise<string> {
  let text = "";
  for (;;) {
    const c = io.read();
    if (c === null) return text;
    if (c === undefined) await within(io.wait(), 5_000, what);
    else text += new TextDecoder().decode(c);
  }
}

/** Reads `io` to its end; returns the byte count. */
async function readAll(io: DenoConnIo): Promise<number> {
  let bytes = 0;
  for (;;) {
    const c = io.read();
    if (c === null) return bytes;
    if (c === undefined) await io.wait();
    else bytes += c.length;
  }
}

function closed(io: DenoConnIo): Promise<void> {
  if (io.closed) return Promise.resolve();
  return new Promise((r) => (io.onClose = () => r()));
}

function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

Deno.test("DenoConnIo: reading stops above highWater (the sender is held back), then every byte and the FIN", () =>
  withPeer(async (io, peer) => {
    const size = 8 << 20;
    const sent = Promise.withResolvers<void>();
    peer.end(new Uint8Array(size), () => sent.resolve());
    await pause(300);
    // Nothing read yet: at most the high-water mark plus one read is queued, the rest waits in the kernel.
    assert.ok(io.pending <= 1024 + 64 * 1024, `queued ${io.pending} bytes while paused`);
    assert.ok(peer.writableLength > 0, "the sender is held back by TCP flow control");
    assert.equal(await within(readAll(io), 10_000, "every byte after the pause"), size);
    assert.equal(io.ended, true);
    await within(sent.promise, 5_000, "the sender's last write");
  }, 1024));

Deno.test("DenoConnIo: read chunks are never overwritten by later reads", () =>
  withPeer(async (io, peer) => {
    const held: Uint8Array[] = [];
    for (let i = 0; i < 200; i++) {
      peer.write(new Uint8Array(300).fill(i & 0xff));
      for (;;) {
        const c = io.read();
        if (c === undefined) {
          await within(io.wait(), 5_000, "a chunk");
          continue;
        }
        assert.ok(c !== null);
        held.push(c);
        break;
      }
      // Take what arrived of this write before the next one, so each write is read on its own.
      while (held.reduce((n, c) => n + c.length, 0) < (i + 1) * 300) {
        const c = io.read();
        if (c === undefined) await within(io.wait(), 5_000, "the rest of a write");
        else if (c !== null) held.push(c);
      }
    }
    const all = new Uint8Array(held.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of held) {
      all.set(c, at);
      at += c.length;
    }
    for (let i = 0; i < 200; i++) {
      assert.ok(all.subarray(i * 300, (i + 1) * 300).every((b) => b === (i & 0xff)), `write ${i} intact`);
    }
  }));

Deno.test("DenoConnIo: write reports backpressure while the peer does not read, drain() waits it out", async () => {
  // The peer accepts and reads nothing until told: the kernel's buffers fill, then ours.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const io = new DenoConnIo(
    await Deno.connect({ hostname: "127.0.0.1", port: listener.addr.port }),
    64 * 1024,
    16 * 1024,
  );
  const peer = await listener.accept();
  try {
    let written = 0;
    for (let still = 0; still < 20;) {
      if (io.write(new Uint8Array(64 * 1024))) still = 0;
      else still++;
      written += 64 * 1024;
      assert.ok(written < 256 << 20, "write() never reported backpressure");
      await pause(still > 0 ? 10 : 0);
      if (still > 0 && !io.needsDrain) still = 0;
    }
    assert.equal(io.needsDrain, true);
    let drained = false;
    const d = io.drain().then(() => (drained = true));
    await pause(200);
    assert.equal(drained, false, "drain() resolved while the peer read nothing");
    const reading = (async () => {
      let got = 0;
      const buf = new Uint8Array(256 * 1024);
      for (;;) {
        const n = await peer.read(buf);
        if (n === null) return got;
        got += n;
      }
    })();
    await within(d, 5_000, "drain after the peer reads");
    assert.equal(io.needsDrain, false);
    io.end();
    assert.equal(await within(reading, 10_000, "every byte, then the FIN"), written);
    assert.equal(io.bytesOut, written);
  } finally {
    io.destroy();
    peer.close();
    listener.close();
  }
});

Deno.test("DenoConnIo: half-close both ways: end() sends FIN and reading goes on; the peer's FIN then closes", () =>
  withPeer(async (io, peer) => {
    const peerGot: Uint8Array[] = [];
    peer.on("data", (c: Uint8Array) => peerGot.push(c));
    const peerEnded = new Promise((r) => peer.once("end", r));
    io.cork();
    io.write(new TextEncoder().encode("he"));
    io.write(new TextEncoder().encode("llo"));
    io.uncork();
    io.end();
    await within(peerEnded, 5_000, "the peer sees the FIN");
    assert.equal(new TextDecoder().decode(Buffer.concat(peerGot)), "hello");
    assert.equal(io.closed, false, "the read side stays open after end()");
    assert.throws(() => io.write(new Uint8Array(1)), /after end/);
    const isClosed = closed(io);
    peer.end("late answer");
    assert.equal(await readText(io, "the answer after our FIN"), "late answer");
    await within(isClosed, 5_000, "the close once both sides ended");
    assert.equal(io.error, null);
  }));

Deno.test("DenoConnIo: a reset by the peer is an error after the data that came first; writes then throw", () =>
  withPeer(async (io, peer) => {
    const isClosed = closed(io);
    peer.write("before the reset", () => peer.resetAndDestroy());
    let text = "";
    let error: unknown = null;
    for (;;) {
      let c: Uint8Array | null | undefined;
      try {
        c = io.read();
      } catch (e) {
        error = e;
        break;
      }
      if (c === null) break;
      if (c === undefined) await within(io.wait(), 5_000, "data or the reset");
      else text += new TextDecoder().decode(c);
    }
    assert.equal(text, "before the reset");
    assert.ok(error instanceof Error, `the reset is an error, got ${error}`);
    await within(isClosed, 5_000, "the close after the reset");
    assert.equal(io.closed, true);
    assert.throws(() => io.write(new Uint8Array(1)), /closed/);
  }));

Deno.test("DenoConnIo: destroy() closes the peer connection (peer link) and calls onClose once", async () => {
  const srv = await peerServer();
  const a = new DenoConnIo(await Deno.connect({ hostname: "127.0.0.1", port: srv.port }));
  const b = new DenoConnIo(await Deno.connect({ hostname: "127.0.0.1", port: srv.port }));
  const pa = await srv.accepted();
  const pb = await srv.accepted();
  try {
    let calls = 0;
    a.peer = b;
    b.peer = a;
    a.onClose = () => calls++;
    const bClosed = closed(b);
    const waiting = a.wait();
    a.destroy();
    await within(bClosed, 5_000, "the linked connection's close");
    await within(waiting, 5_000, "a pending wait() woken by the close");
    assert.equal(calls, 1);
    assert.equal(a.read(), null);
    await within(Promise.all([pa, pb].map((s) => new Promise((r) => s.once("end", r)))), 5_000, "both FINs");
  } finally {
    a.destroy();
    b.destroy();
    srv.close();
  }
});

Deno.test("DenoConnIo: lingerClose writes the reply, discards what the peer still sends, closes at its FIN", () =>
  withPeer(async (io, peer) => {
    const peerGot: Uint8Array[] = [];
    peer.on("data", (c: Uint8Array) => peerGot.push(c));
    const isClosed = closed(io);
    peer.write(new Uint8Array(100_000));
    io.lingerClose(new TextEncoder().encode("bye"), 5_000);
    await within(new Promise((r) => peer.once("end", r)), 5_000, "the reply and FIN");
    assert.equal(new TextDecoder().decode(Buffer.concat(peerGot)), "bye");
    assert.equal(io.closed, false, "still reading the peer");
    peer.end(new Uint8Array(100_000));
    await within(isClosed, 5_000, "the close at the peer's FIN");
    assert.equal(io.pending, 0, "lingering reads are discarded");
  }));

Deno.test("DenoConnIo over Deno.connectTls: the FIN after a backpressure pause arrives, every byte read", async () => {
  const ca = await makeCa("deno conn io test CA");
  const leaf = await makeLeaf(ca, { dnsNames: ["localhost"] });
  const size = 4 << 20;
  const sockets: tls.TLSSocket[] = [];
  const server = tls.createServer({ cert: leaf.certPem, key: leaf.keyPem, allowHalfOpen: true }, (s) => {
    sockets.push(s);
    s.on("error", () => {});
    s.resume();
    s.end(new Uint8Array(size));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  const io = new DenoConnIo(await Deno.connectTls({ hostname: "localhost", port, caCerts: [ca.pem] }), 1024);
  try {
    await pause(200);
    assert.ok(io.pending <= 1024 + 64 * 1024, `queued ${io.pending} bytes while paused`);
    assert.equal(await within(readAll(io), 10_000, "every byte and the FIN over TLS"), size);
    assert.equal(io.ended, true);
  } finally {
    io.destroy();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
