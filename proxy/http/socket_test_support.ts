/**
 * Two real loopback connections for the data path's unit tests (body_copy_test.ts,
 * request_body_test.ts): what a test sends on `feed` is read from `src`, and what is written to
 * `dst` arrives at a sink that collects it until `dst` ends.
 *
 * @module
 */
import net from "node:net";
import { latin1 } from "./chars.ts";
import { NodeSocketIo } from "./socket_io.ts";

/**
 * A copy between two real loopback connections: `src` reads what the test sends on `feed`, and what
 * the copy writes to `dst` arrives at `sink`, collected until `dst` is closed.
 */
export async function copying(): Promise<{
  feed: net.Socket;
  src: NodeSocketIo;
  dst: NodeSocketIo;
  received: () => Promise<string>;
  close: () => void;
}> {
  const accepted: net.Socket[] = [];
  const server = net.createServer({ allowHalfOpen: true }, (s) => accepted.push(s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  const connect = async (): Promise<net.Socket> => {
    const s = net.connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    await new Promise<void>((resolve, reject) => s.once("connect", resolve).once("error", reject));
    return s;
  };
  const feed = await connect();
  const sink = await connect();
  const deadline = Date.now() + 5_000;
  while (accepted.length < 2) {
    if (Date.now() > deadline) throw new Error("loopback connections not accepted within 5 s");
    await new Promise((r) => setTimeout(r, 5));
  }
  const src = new NodeSocketIo(accepted[0]);
  const dst = new NodeSocketIo(accepted[1]);
  const chunks: Uint8Array[] = [];
  sink.on("data", (c: Uint8Array) => chunks.push(c));
  const ended = new Promise<void>((resolve) => sink.once("end", resolve).once("close", resolve));
  return {
    feed,
    src,
    dst,
    received: async () => {
      dst.end();
      await ended;
      return chunks.map((c) => latin1(c, 0, c.length)).join("");
    },
    close: () => {
      for (const s of [feed, sink, ...accepted]) s.destroy();
      server.close();
    },
  };
}
