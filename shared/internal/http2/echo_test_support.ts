/**
 * A tiny HTTP/2 (h2c, prior knowledge) echo server on the codec, for the codec's tests and
 * benchmark: `GET` answers `hello <path>\n`, other methods echo the request body; a request with
 * `x-echo-trailers` gets the trailer `x-echo: done` (and `grpc-status: 0`) after its body.
 *
 * @module
 */
import * as net from "node:net";
import { Http2Connection } from "./connection.ts";
import type { CloseInfo } from "./session.ts";
import type { Http2Stream } from "./stream.ts";
import { headerValue } from "./headers.ts";
import type { Http2Limits } from "./limits.ts";

/** A running echo server. */
export interface EchoServer {
  port: number;
  /** Connections open now, oldest first (closed ones are dropped: the server runs in benchmarks too). */
  readonly connections: Http2Connection[];
  /** How the last 100 connections closed. */
  readonly closes: CloseInfo[];
  /** Protocol log lines. */
  readonly log: string[];
  close(): Promise<void>;
}

const TEXT = new TextEncoder();

/** Handles one request stream. */
export async function echo(stream: Http2Stream): Promise<void> {
  try {
    const method = headerValue(stream.headers, ":method");
    const trailers = headerValue(stream.headers, "x-echo-trailers") !== undefined;
    stream.respond([[":status", "200"], ["content-type", "text/plain"]]);
    if (method === "GET" || method === "HEAD") {
      for await (const _ of stream) { /* drain */ }
      if (method === "GET") {
        await stream.write(TEXT.encode(`hello ${headerValue(stream.headers, ":path")}\n`));
      }
    } else {
      for await (const chunk of stream) await stream.write(chunk);
    }
    stream.end(trailers ? [["x-echo", "done"], ["grpc-status", "0"]] : undefined);
  } catch {
    // the stream was reset: nothing to answer
  }
}

/**
 * Starts the echo server on 127.0.0.1 (`port` 0: any free port), with `limits` over the defaults and
 * {@link echo} (or `handler`) per request.
 */
export function startEchoServer(
  port = 0,
  log = false,
  limits?: Partial<Http2Limits>,
  handler: (stream: Http2Stream) => void = (s) => void echo(s),
): Promise<EchoServer> {
  const connections: Http2Connection[] = [];
  const closes: CloseInfo[] = [];
  const lines: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    const conn = new Http2Connection(socket, {
      role: "server",
      limits,
      onStream: handler,
      log: (m) => {
        if (lines.length < 1000) lines.push(m);
        if (log) console.error(m);
      },
    });
    connections.push(conn);
    conn.closed.then((c) => {
      connections.splice(connections.indexOf(conn), 1);
      if (closes.push(c) > 100) closes.shift();
    });
  });
  return new Promise((resolve) => {
    server.listen(port, "127.0.0.1", () => {
      const addr = server.address() as net.AddressInfo;
      resolve({
        port: addr.port,
        connections,
        closes,
        log: lines,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

/** The benchmark's `--minimal` handler: 204 with END_STREAM on the HEADERS, the body ignored. */
export function noContent(stream: Http2Stream): void {
  stream.respond(NO_CONTENT, { endStream: true });
}

const NO_CONTENT: [string, string][] = [[":status", "204"]];

/**
 * `deno run -A echo_test_support.ts [port] [--log] [--minimal]`: protocol errors go to stderr with
 * `--log`; `--minimal` answers every request with {@link noContent} instead of echoing; on
 * SIGUSR2 it prints `heap <bytes used>` (after a full collection when run with `--v8-flags=--expose-gc`).
 */
if (import.meta.main) {
  const port = Number(Deno.args[0] ?? 8081);
  const handler = Deno.args.includes("--minimal") ? noContent : undefined;
  const s = await startEchoServer(port, Deno.args.includes("--log"), undefined, handler);
  console.error(`h2c echo server on 127.0.0.1:${s.port}`);
  Deno.addSignalListener("SIGUSR2", () => {
    (globalThis as { gc?: () => void }).gc?.();
    console.log(`heap ${Deno.memoryUsage().heapUsed}`);
  });
}
