/**
 * The frame writer over a real loopback socket: what one event-loop turn queued arrives whole and in
 * order, and a batch of many small frames (a policy change's ~1,000 small responses on one
 * connection) leaves in few socket writes while large payloads (shared response bytes) are not copied.
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { within } from "../testing/deadline.ts";
import { FrameWriter } from "./frame_writer.ts";

/** A connected loopback pair: the writer's socket (its writes counted) and everything the peer received. */
async function pair(): Promise<{
  socket: net.Socket;
  writes: Uint8Array[];
  received(n: number): Promise<Uint8Array>;
  close(): Promise<void>;
}> {
  const chunks: Uint8Array[] = [];
  let got = 0;
  let peer: net.Socket | undefined;
  const server = net.createServer((s) => {
    peer = s;
    s.on("data", (c: Uint8Array) => {
      chunks.push(c);
      got += c.length;
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect((server.address() as net.AddressInfo).port, "127.0.0.1", () => resolve(s));
    s.once("error", reject);
  });
  const writes: Uint8Array[] = [];
  const write = socket.write.bind(socket) as (chunk: Uint8Array, cb?: () => void) => boolean;
  (socket as unknown as { write: typeof write }).write = (chunk, cb) => {
    writes.push(chunk);
    return write(chunk, cb);
  };
  return {
    socket,
    writes,
    received: async (n) => {
      await within(
        (async () => {
          while (got < n) await new Promise((r) => setTimeout(r, 5));
        })(),
        10_000,
        "the peer receives the batch",
      );
      const out = new Uint8Array(got);
      let o = 0;
      for (const c of chunks) {
        out.set(c, o);
        o += c.length;
      }
      return out;
    },
    close: async () => {
      socket.destroy();
      peer?.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

function bytes(n: number, seed: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
}

Deno.test("frame writer: a batch of small frames and large payloads arrives in order, the small ones joined", async () => {
  const p = await pair();
  try {
    const w = new FrameWriter(p.socket, 100_000, 10_000, (what) => assert.fail(what), 1 << 20);
    const sent: Uint8Array[] = [];
    const large = bytes(8192, 1);
    // 1,000 responses of a 9-octet header, a 20-octet prefix and nonce and a 150-octet message, then
    // three 8 KiB payloads (a cold sync's shared chunks) between more small frames.
    for (let i = 0; i < 1000; i++) {
      const parts = [bytes(9, i), bytes(20, i + 1), bytes(150, i + 2)];
      w.data(parts[0], parts[1], parts[2]);
      sent.push(...parts);
      if (i % 400 === 0) {
        const header = bytes(9, 7);
        w.data(header, large);
        sent.push(header, large);
      }
    }
    w.frame(bytes(13, 9));
    sent.push(bytes(13, 9));
    let total = 0;
    for (const s of sent) total += s.length;
    const expected = new Uint8Array(total);
    let o = 0;
    for (const s of sent) {
      expected.set(s, o);
      o += s.length;
    }
    assert.deepEqual(await p.received(total), expected);
    // Without joining: one write per part (3,000+). With it: the three large payloads as they are,
    // and the small runs between them one write each.
    assert.ok(p.writes.length <= 7, `${p.writes.length} socket writes`);
    assert.equal(p.writes.filter((c) => c === large).length, 3, "large payloads are written without a copy");
  } finally {
    await p.close();
  }
});
