/**
 * Test helpers: a client Http2Connection to a server on 127.0.0.1, and reading a whole body.
 *
 * @module
 */
import * as net from "node:net";
import { within } from "../testing/deadline.ts";
import { Http2Connection, type Http2ConnectionOptions } from "./connection.ts";
import type { HeaderList } from "./headers.ts";
import type { Http2Stream } from "./stream.ts";
import { type EchoServer, startEchoServer } from "./echo_test_support.ts";

/** Connects a client connection to 127.0.0.1:`port`. */
export function connectClient(
  port: number,
  options: Partial<Http2ConnectionOptions> = {},
): Promise<{ conn: Http2Connection; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.off("error", reject);
      resolve({ conn: new Http2Connection(socket, { ...options, role: "client" }), socket });
    });
    socket.once("error", reject);
  });
}

/** Request headers for `path` on `authority`. */
export function get(path: string, method = "GET", extra: HeaderList = []): HeaderList {
  return [[":method", method], [":scheme", "http"], [":authority", "test"], [":path", path], ...extra];
}

/** The whole body of a stream as a string (latin1). */
export async function bodyText(stream: Http2Stream): Promise<string> {
  let s = "";
  for await (const chunk of stream) s += String.fromCharCode(...chunk);
  return s;
}

/**
 * A test body run with an echo server and a client connected to it; both are closed afterwards
 * (the client gracefully, and awaited).
 */
export function withEchoClient(
  fn: (ctx: { server: EchoServer; conn: Http2Connection }) => Promise<void>,
): () => Promise<void> {
  return async () => {
    const server = await startEchoServer();
    const { conn } = await connectClient(server.port);
    try {
      await fn({ server, conn });
    } finally {
      conn.close();
      await conn.closed;
      await server.close();
    }
  };
}

/** A whole response as its body's length in octets and its `grpc-status` trailer (undefined without one). */
export async function grpcOutcome(stream: Http2Stream): Promise<{ n: number; status: string | undefined }> {
  let n = 0;
  for await (const chunk of stream) n += chunk.length;
  return { n, status: (await stream.trailers)?.find(([k]) => k === "grpc-status")?.[1] };
}

/** After `ms` more of not reading (the caller paused `socket`), reads every stream's whole response (60 s at most). */
export async function resumeAndRead(
  socket: net.Socket,
  ms: number,
  streams: Http2Stream[],
): Promise<{ n: number; status: string | undefined }[]> {
  await new Promise((r) => setTimeout(r, ms));
  socket.resume();
  return await within(Promise.all(streams.map(grpcOutcome)), 60_000, "every response");
}
