import assert from "node:assert/strict";
import * as net from "node:net";
import { within } from "../testing/deadline.ts";
import { FrameWriter, type WriteBatch } from "./frame_writer.ts";

/** A connected socket pair on 127.0.0.1; `writes` counts the socket writes of the first. */
async function pair(): Promise<
  { a: net.Socket; b: net.Socket; writes: () => number; close(): Promise<void> }
> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const accepted = new Promise<net.Socket>((r) => server.once("connection", r));
  const a = net.connect((server.address() as net.AddressInfo).port, "127.0.0.1");
  await new Promise((r) => a.once("connect", r));
  const b = await accepted;
  let n = 0;
  const write = a.write.bind(a);
  a.write = ((...args: Parameters<net.Socket["write"]>) => (n++, write(...args))) as net.Socket["write"];
  return {
    a,
    b,
    writes: () => n,
    async close() {
      a.destroy();
      b.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Frames queued in three microtasks of one event-loop turn; how many socket writes carried them. */
async function writesFor(batch: WriteBatch): Promise<number> {
  const p = await pair();
  try {
    const w = new FrameWriter(p.a, 100, 100, () => assert.fail("no flood"), 1 << 20, batch);
    let got = 0;
    const all = new Promise<void>((r) => p.b.on("data", (d: Uint8Array) => (got += d.length) === 3 && r()));
    w.frame(new Uint8Array([1]));
    await Promise.resolve();
    w.frame(new Uint8Array([2]));
    await Promise.resolve();
    w.frame(new Uint8Array([3]));
    await within(all, 5000, "3 octets");
    return p.writes();
  } finally {
    await p.close();
  }
}

Deno.test("frame writer: per microtask turn by default, once per event-loop turn with macrotask", async () => {
  assert.equal(await writesFor("microtask"), 3, "each microtask turn writes what it queued");
  assert.equal(await writesFor("macrotask"), 1, "one event-loop turn, one write");
});
