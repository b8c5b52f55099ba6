/**
 * Inbound protocol dispatch: how each connection accepted on a container port is carried, from the
 * protocol of the service ports that target that port (proxy/admin/listener_protocol.ts decides it,
 * the same decision `meshctl proxy-config listener` shows):
 *
 * - `http1` (HTTP, HTTP_PROXY, GRPC-WEB): the HTTP/1.1 path;
 * - `tcp` (TCP, TLS, HTTPS, MONGO, MYSQL, REDIS, ...): opaque bytes under the L4 rules (./tcp_inbound.ts);
 * - `http2` (HTTP2, GRPC): the {@link InboundHttp2Handler}; a listener built without one (unit tests of
 *   the TCP path) carries such a connection as TCP under the L4 rules, so that an ALLOW rule with
 *   HTTP-only fields allows nothing and a DENY rule's HTTP-only parts are ignored (fail closed);
 * - `detect` (UNKNOWN): the first bytes (after mutual TLS, the decrypted ones) decide with
 *   shared/protocol/detect.ts: an HTTP/1.x request line goes to the HTTP/1.1 path, the HTTP/2
 *   preface to the HTTP/2 path (or TCP, as above), anything else to TCP.
 *
 * Detection waits for the client's first bytes with no detection timeout of its own, as Istio's
 * default (MeshConfig `protocolDetectionTimeout: 0s`): a server-first protocol must be declared on its
 * service port (Kubernetes ports 25, 53, 3306 and 27017 are TCP by default, shared/protocol). The listener's first-byte deadline (`handshakeTimeoutMs`, 10 s)
 * still closes a connection that sends nothing, or too little to decide, in time; a client that
 * half-closes before the bytes decide is carried as TCP with what it sent.
 *
 * @module
 */
import type net from "node:net";
import { type DetectedProtocol, detectProtocol } from "../../shared/protocol/mod.ts";
import { inboundListenerProtocol, inboundRoute } from "../admin/listener_protocol.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import type { PeerIdentity } from "./front.ts";
import { pauseReading, resumeReading } from "../tcp/relay.ts";

/** How one connection is carried. */
export type InboundCarriage = "http1" | "http2" | "tcp";

/** The route of a port: a carriage, or `detect` per connection. */
export type PortRoute = InboundCarriage | "detect";

/** An inbound connection handed to the HTTP/2 path. */
export interface InboundHttp2Connection {
  /** The socket to serve (a TLSSocket over mutual TLS), paused, the bytes read so far put back. */
  socket: net.Socket;
  /** The accepted TCP socket (addresses). */
  raw: net.Socket;
  /** What mutual TLS established; null for plain text. */
  peer: PeerIdentity | null;
  /** The container port. */
  port: number;
}

/**
 * The hook of the HTTP/2 path (issue 16, item 4): serves an HTTP/2 or gRPC connection, applying
 * the HTTP filter chain per stream. When a listener has none, such connections are TCP.
 */
export type InboundHttp2Handler = (connection: InboundHttp2Connection) => void;

const routes = new WeakMap<RuntimeSnapshot, Map<number, PortRoute>>();

/**
 * The route of container port `port` in `snapshot`: from the protocol of the first (by key) service
 * port of this workload that targets it, `detect` when none does. Cached per snapshot object.
 */
export function portRouteOf(snapshot: RuntimeSnapshot, port: number): PortRoute {
  let byPort = routes.get(snapshot);
  if (byPort === undefined) {
    byPort = new Map();
    routes.set(snapshot, byPort);
  }
  let route = byPort.get(port);
  if (route === undefined) {
    route = inboundRoute(inboundListenerProtocol(snapshot.workload, snapshot.services, port).selected);
    byPort.set(port, route);
  }
  return route;
}

/** The carriage of a connection whose first bytes were detected as `d` (never `more`). */
export function detectedCarriage(d: Exclude<DetectedProtocol, "more">): InboundCarriage {
  return d === "http1" ? "http1" : d === "http2" ? "http2" : "tcp";
}

/**
 * Reads `socket`'s first bytes until {@link detectProtocol} decides, then holds the socket
 * (proxy/tcp/relay.ts `pauseReading`: the path that serves it resumes it with `resumeReading`), puts
 * every byte read back (`unshift`) and calls `decided` once with `unread` null. A FIN before the
 * bytes decide counts as `tcp`, and the bytes come as `unread` (a stream cannot take bytes back
 * after its end). A close or error before that never calls `decided` (the listener's deadline and
 * close handling apply). Returns a function that stops reading (the listener closing).
 */
export function detectFirstBytes(
  socket: net.Socket,
  decided: (protocol: Exclude<DetectedProtocol, "more">, unread: Uint8Array | null) => void,
): () => void {
  let seen = new Uint8Array(0);
  const stop = (): void => {
    socket.off("data", onData);
    socket.off("end", onEnd);
  };
  const onData = (chunk: Uint8Array): void => {
    const all = new Uint8Array(seen.length + chunk.length);
    all.set(seen);
    all.set(chunk, seen.length);
    seen = all;
    const d = detectProtocol(seen);
    if (d === "more") return;
    stop();
    pauseReading(socket);
    socket.unshift(seen);
    decided(d, null);
  };
  const onEnd = (): void => {
    stop();
    decided("tcp", seen);
  };
  socket.on("data", onData);
  socket.on("end", onEnd);
  resumeReading(socket);
  return stop;
}
