/**
 * `pods/portforward` over WebSocket, a stand-in for the kubelet's (issue 15, item 1a): the
 * `v4.channel.k8s.io` (also `portforward.k8s.io`) subprotocol of kube-apiserver's WebSocket port
 * forwarding, one port per connection (`?ports=<port>`): binary messages whose first byte is the
 * channel (0 data, 1 error); the first message on each channel is the port, 2 bytes little-endian.
 *
 * A real kubelet connects inside the pod's network namespace; this server connects to the pod's
 * `status.podIP` at the port, so the pod IP must be reachable from the server (127.0.0.1 in tests, or
 * a lab node's pod addresses). Not implemented: kubectl 1.32's `SPDY/3.1+portforward.k8s.io` (SPDY
 * tunnelled in WebSocket) and plain SPDY upgrades: `kubectl port-forward` gets 400 here.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import * as net from "node:net";
import type { Duplex } from "node:stream";

/** The WebSocket subprotocols served, in order of preference. */
export const PORT_FORWARD_PROTOCOLS = ["v4.channel.k8s.io", "portforward.k8s.io"];

const PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/portforward$/;
const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC11B63";

/** What the upgrade handler needs of the server. */
export interface PortForwardContext {
  /** Whether the request's credentials are valid. */
  authenticated(authorization: string | undefined): Promise<boolean>;
  /** The pod's IP, or undefined when the pod does not exist or has none. */
  podIp(namespace: string, name: string): string | undefined;
}

function refuse(socket: Duplex, status: string, message: string): void {
  socket.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${message}\n`);
}

/** One unmasked binary frame (server to client). */
function frame(payload: Uint8Array, opcode = 2): Buffer {
  const n = payload.length;
  const head = n < 126
    ? Buffer.from([0x80 | opcode, n])
    : n < 65536
    ? Buffer.from([0x80 | opcode, 126, n >> 8, n & 0xff])
    : Buffer.concat([
      Buffer.from([0x80 | opcode, 127, 0, 0, 0, 0]),
      Buffer.from([n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]),
    ]);
  return Buffer.concat([head, Buffer.from(payload)]);
}

/**
 * Reads masked client frames from `buffered`; returns the complete ones and what is left.
 * Fragmented messages are not expected (clients send each message as one frame).
 */
function parseFrames(buffered: Buffer): { frames: { opcode: number; payload: Buffer }[]; rest: Buffer } {
  const frames: { opcode: number; payload: Buffer }[] = [];
  let at = 0;
  for (;;) {
    if (buffered.length - at < 2) break;
    const opcode = buffered[at] & 0x0f;
    const masked = (buffered[at + 1] & 0x80) !== 0;
    let len = buffered[at + 1] & 0x7f;
    let off = at + 2;
    if (len === 126) {
      if (buffered.length < off + 2) break;
      len = buffered.readUInt16BE(off);
      off += 2;
    } else if (len === 127) {
      if (buffered.length < off + 8) break;
      len = Number(buffered.readBigUInt64BE(off));
      off += 8;
    }
    const maskAt = off;
    if (masked) off += 4;
    if (buffered.length < off + len) break;
    const payload = Buffer.from(buffered.subarray(off, off + len));
    if (masked) { for (let i = 0; i < len; i++) payload[i] ^= buffered[maskAt + (i % 4)]; }
    frames.push({ opcode, payload });
    at = off + len;
  }
  return { frames, rest: buffered.subarray(at) };
}

/**
 * Handles an HTTP upgrade if it is a port-forward; returns false for other paths (the caller answers).
 */
export function handlePortForwardUpgrade(
  ctx: PortForwardContext,
  req: IncomingMessage,
  socket: Duplex,
): boolean {
  const url = new URL(req.url ?? "/", "https://x");
  const m = PATH.exec(url.pathname);
  if (!m) return false;
  void (async () => {
    if (!(await ctx.authenticated(req.headers.authorization))) {
      return refuse(socket, "401 Unauthorized", "Unauthorized");
    }
    const offered = String(req.headers["sec-websocket-protocol"] ?? "").split(",").map((s) => s.trim());
    const protocol = PORT_FORWARD_PROTOCOLS.find((p) => offered.includes(p));
    const key = req.headers["sec-websocket-key"];
    if (!protocol || typeof key !== "string") {
      return refuse(
        socket,
        "400 Bad Request",
        `port-forward: a WebSocket upgrade with subprotocol ${PORT_FORWARD_PROTOCOLS.join(" or ")} is needed`,
      );
    }
    const ports = url.searchParams.getAll("ports").flatMap((p) => p.split(","));
    const port = Number(ports[0]);
    if (ports.length !== 1 || !Number.isInteger(port) || port <= 0 || port > 65535) {
      return refuse(socket, "400 Bad Request", "port-forward: exactly one port (?ports=<port>) is supported");
    }
    const ip = ctx.podIp(decodeURIComponent(m[1]), decodeURIComponent(m[2]));
    if (!ip) return refuse(socket, "404 Not Found", `pod ${m[1]}/${m[2]} does not exist or has no IP`);
    const accept = createHash("sha1").update(key + WS_GUID).digest("base64");
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n` +
        `sec-websocket-accept: ${accept}\r\nsec-websocket-protocol: ${protocol}\r\n\r\n`,
    );
    relay(socket, ip, port);
  })().catch(() => socket.destroy());
  return true;
}

function relay(socket: Duplex, ip: string, port: number): void {
  const portBytes = new Uint8Array([port & 0xff, port >> 8]);
  socket.write(frame(new Uint8Array([0, ...portBytes])));
  socket.write(frame(new Uint8Array([1, ...portBytes])));
  const target = net.connect({ host: ip, port });
  let pending: Buffer = Buffer.alloc(0);
  const end = () => {
    target.destroy();
    if (!socket.destroyed) socket.end(frame(new Uint8Array(0), 8));
  };
  target.on("data", (chunk: Buffer) => socket.write(frame(new Uint8Array([0, ...chunk]))));
  target.on("error", (e) => {
    if (!socket.destroyed) socket.write(frame(new Uint8Array([1, ...new TextEncoder().encode(e.message)])));
    end();
  });
  target.on("close", end);
  socket.on("data", (chunk: Buffer) => {
    const { frames, rest } = parseFrames(Buffer.concat([pending, chunk]));
    pending = rest;
    for (const f of frames) {
      if (f.opcode === 8) return end();
      if (f.opcode === 9) socket.write(frame(f.payload, 10));
      else if ((f.opcode === 2 || f.opcode === 0) && f.payload[0] === 0 && f.payload.length > 1) {
        target.write(f.payload.subarray(1));
      }
    }
  });
  socket.on("close", () => target.destroy());
  socket.on("error", () => target.destroy());
}
