/**
 * How the scale bench's simulated proxies (client.ts) reach meshd: BENCH_CLIENT=codec (default), the
 * project's HTTP/2 codec in client role (shared/internal/http2/) on node:net sockets, or
 * BENCH_CLIENT=node, Deno's node:http2 (nghttp2 and the node-compat streams layer; the client of
 * every figure before session 11). Both advertise the largest flow-control windows HTTP/2 allows (the
 * bench measures meshd, not the client's flow control) and the default 16 KiB frames (as Envoy
 * does, so meshd frames its responses as for a real proxy), and put up to `perSession` streams on one
 * connection.
 *
 * @module
 */
import net from "node:net";
import * as http2 from "node:http2";
import { Http2Connection } from "../../../shared/internal/http2/connection.ts";
import type { HeaderList } from "../../../shared/internal/http2/headers.ts";
import type { Http2Stream } from "../../../shared/internal/http2/stream.ts";

/** What went wrong or ended, counted for the runner's report. */
export interface Counters {
  errors: number;
  closedSessions: number;
  closedStreams: number;
}

/**
 * Gets each DATA chunk of one stream, in order; returns the bytes to write back on the stream (the
 * ACKs of the messages the chunk finished, in one buffer), or null.
 */
export type OnData = (chunk: Uint8Array) => Uint8Array | null;

/** Opens ADS streams to meshd. */
export interface Transport {
  /** Opens one stream and writes `opening` (the stream's first requests) on it. */
  open(opening: Uint8Array, onData: OnData): Promise<void>;
}

/** The transports BENCH_CLIENT selects. */
export const TRANSPORTS = ["codec", "node"] as const;

const PATH = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources";
const MAX_WINDOW = 2 ** 31 - 1;
/**
 * The codec clients' stream receive window, octets (`BENCH_CLIENT_WINDOW`; default 2^31-1, about what
 * Envoy's 256 MiB default lets through). 65536 is what the proxy's agent advertises (the codec's default);
 * the connection window stays 2^31-1, as 1,000 simulated proxies share one connection.
 */
const STREAM_WINDOW = Number(Deno.env.get("BENCH_CLIENT_WINDOW") ?? MAX_WINDOW);
const SETTINGS_WAIT_MS = 30_000;

/** The transport `name` names (one of {@link TRANSPORTS}); throws on another name. */
export function transport(name: string, port: number, perSession: number, counters: Counters): Transport {
  if (name === "node") return nodeTransport(port, perSession, counters);
  if (name === "codec") return codecTransport(port, perSession, counters);
  throw new Error(`BENCH_CLIENT: ${name} is not one of ${TRANSPORTS.join(", ")}`);
}

function nodeTransport(port: number, perSession: number, counters: Counters): Transport {
  let session: http2.ClientHttp2Session | undefined;
  let onSession = 0;
  return {
    open(opening, onData) {
      if (session === undefined || onSession >= perSession) {
        const s = http2.connect(`http://127.0.0.1:${port}`, { settings: { initialWindowSize: MAX_WINDOW } });
        s.on("connect", () => s.setLocalWindowSize(MAX_WINDOW));
        s.on("error", (e: Error) => {
          counters.errors++;
          console.error(`client ${Deno.pid}: connection error: ${e.message}`);
        });
        s.on("goaway", (code: number) => console.error(`client ${Deno.pid}: GOAWAY ${code}`));
        s.on("close", () => counters.closedSessions++);
        session = s;
        onSession = 0;
      }
      onSession++;
      const stream = session.request({
        ":method": "POST",
        ":path": PATH,
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("data", (chunk: Uint8Array) => {
        const acks = onData(chunk);
        if (acks !== null) stream.write(acks);
      });
      stream.on("error", () => counters.errors++);
      stream.on("close", () => counters.closedStreams++);
      stream.write(opening);
      return Promise.resolve();
    },
  };
}

function codecTransport(port: number, perSession: number, counters: Counters): Transport {
  // Every connection is dialled at once, as node:http2 does: waiting for one connection's SETTINGS
  // before dialling the next made the later ones wait for meshd to be done with the first's cold sync.
  let conn: Promise<Http2Connection> | undefined;
  let onConn = 0;
  const headers: HeaderList = [
    [":method", "POST"],
    [":scheme", "http"],
    [":authority", `127.0.0.1:${port}`],
    [":path", PATH],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
  ];
  return {
    open(opening, onData) {
      if (conn === undefined || onConn >= perSession) {
        conn = codecConnect(port, counters);
        onConn = 0;
      }
      onConn++;
      return conn.then((c) => {
        // Throws (counted below) when meshd allows fewer streams per connection than perSession.
        const stream = c.request(headers);
        stream.write(opening);
        return stream;
      }).then((stream) => void read(stream, onData), (e: Error) => {
        if (counters.errors++ < 5) console.error(`client ${Deno.pid}: ${e.message}`);
      });
    },
  };

  async function read(stream: Http2Stream, onData: OnData): Promise<void> {
    try {
      const head = await stream.response;
      if (head.find(([n]) => n === ":status")?.[1] !== "200") throw new Error(`response ${head}`);
      for (let chunk = await stream.read(); chunk !== null; chunk = await stream.read()) {
        const acks = onData(chunk);
        // Not awaited: writes go out in order, and a reset fails the read as well.
        if (acks !== null) stream.write(acks);
      }
      const trailers = await stream.trailers;
      throw new Error(`stream ended: ${JSON.stringify(trailers)}`);
    } catch (e) {
      // The first few only: a lost connection fails its thousand streams with the same reason.
      if (counters.errors++ < 5) {
        console.error(`client ${Deno.pid}: stream ${stream.id}: ${(e as Error).message}`);
      }
    } finally {
      counters.closedStreams++;
    }
  }
}

/** A codec connection whose peer SETTINGS have arrived (so that its stream limit is known). */
async function codecConnect(port: number, counters: Counters): Promise<Http2Connection> {
  const socket = net.connect({ host: "127.0.0.1", port });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const conn = new Http2Connection(socket, {
    role: "client",
    limits: { initialStreamWindowSize: STREAM_WINDOW, initialConnectionWindowSize: MAX_WINDOW },
    onGoaway: (g) => console.error(`client ${Deno.pid}: GOAWAY ${g.code} ${g.debug}`),
    log: (line) => console.error(`client ${Deno.pid}: ${line}`),
  });
  conn.closed.then((info) => {
    counters.closedSessions++;
    console.error(`client ${Deno.pid}: connection closed: ${JSON.stringify(info)}`);
  });
  const deadline = Date.now() + SETTINGS_WAIT_MS;
  while (!conn.peerSettingsReceived) {
    if (Date.now() > deadline || conn.draining) {
      counters.errors++;
      throw new Error(`client ${Deno.pid}: no SETTINGS from meshd within ${SETTINGS_WAIT_MS} ms`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  return conn;
}
