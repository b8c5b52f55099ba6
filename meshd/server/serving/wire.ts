/**
 * The pipe protocol between meshd and its serving children (see README.md): frames of
 * `[u32 header length][u32 body length][header JSON][body bytes]`, big-endian, over the child's
 * stdin (meshd to child) and stdout (child to meshd). Bodies carry gRPC messages as the client or
 * meshd encoded them; the child never decodes them.
 *
 * @module
 */
import type * as grpc from "@grpc/grpc-js";

/** What kind of gRPC method a path is, as the child registers it. */
export type MethodKind = "unary" | "bidi";

/** The listener a call came in on. */
export type Transport = "plaintext" | "tls";

/** TLS material of the secure listener: PEM chain and key of meshd's certificate, PEM client roots. */
export interface TlsMaterial {
  certChainPem: string;
  privateKeyPem: string;
  trustBundlePem: string;
}

/** gRPC server options the child applies to both of its servers (meshd's own servers when in process). */
export interface ChildServerOptions {
  maxStreams: number;
  maxRecvMessageBytes: number;
  keepaliveIntervalMs: number;
  keepaliveTimeoutMs: number;
  /** Absent: connections are never aged out. */
  maxConnectionAgeMs?: number;
}

/** {@link ChildServerOptions} as grpc-js's channel options. */
export function grpcServerOptions(o: ChildServerOptions): grpc.ServerOptions {
  return {
    "grpc.max_concurrent_streams": o.maxStreams,
    "grpc.max_receive_message_length": o.maxRecvMessageBytes,
    "grpc.keepalive_time_ms": o.keepaliveIntervalMs,
    "grpc.keepalive_timeout_ms": o.keepaliveTimeoutMs,
    ...(o.maxConnectionAgeMs !== undefined ? { "grpc.max_connection_age_ms": o.maxConnectionAgeMs } : {}),
  };
}

/** The verified client certificate of a TLS call: what xds_auth.ts, debug_xds.ts and the CA read. */
export interface PeerCertificate {
  subjectaltname: string;
  serialNumber: string;
  /** DER, base64. */
  raw: string;
}

/** Frames from meshd to a child. */
export type ToChild =
  | {
    t: "init";
    /** The method paths meshd serves on each listener. */
    methods: Record<Transport, { path: string; kind: MethodKind }[]>;
    options: ChildServerOptions;
    /** Absent: no secure listener. */
    tls?: TlsMaterial;
  }
  | { t: "tls"; tls: TlsMaterial }
  /** A response message of a streaming call (body). */
  | { t: "write"; id: number }
  /** End a call: OK (code 0) with `end()`, else the status; a unary call's OK carries its response as body. */
  | { t: "end"; id: number; code: number; details: string };

/** Frames from a child to meshd. */
export type FromChild =
  | { t: "ready"; ports: { plaintext: number; tls: number } }
  /** A new call; a unary call's request is the body. `peer` is the loopback address meshd's relay used. */
  | {
    t: "open";
    id: number;
    path: string;
    transport: Transport;
    peer: string;
    metadata: Record<string, string[]>;
    cert?: PeerCertificate;
  }
  /** A request message of a streaming call (body). */
  | { t: "data"; id: number }
  /** The client half-closed. */
  | { t: "halfclose"; id: number }
  /** The call is over on the child's side (cancelled, reset, or its status sent). */
  | { t: "gone"; id: number }
  /** A `write` was handed to HTTP/2 (grpc-js's write callback): flow control for meshd's push slots. */
  | { t: "wrote"; id: number };

const EMPTY = new Uint8Array(0);

/** Encodes one frame. */
export function encodeFrame(header: ToChild | FromChild, body: Uint8Array = EMPTY): Uint8Array {
  const head = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + head.length + body.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, head.length);
  view.setUint32(4, body.length);
  out.set(head, 8);
  out.set(body, 8 + head.length);
  return out;
}

/** Largest frame accepted, bytes: above any gRPC message meshd takes (MESH_GPRC_MAXRECVMSGSIZE). */
const MAX_FRAME = 1 << 30;

/**
 * Reads frames from a byte stream until it ends.
 *
 * @throws Error when a frame is larger than 1 GiB or its header is not JSON (a broken pipe peer)
 */
export async function* readFrames<T>(
  stream: ReadableStream<Uint8Array>,
): AsyncGenerator<{ header: T; body: Uint8Array }> {
  // Chunks are joined only once a whole frame has arrived: a large message comes in many chunks.
  let chunks: Uint8Array[] = [];
  let total = 0;
  let need = 8;
  for await (const chunk of stream) {
    chunks.push(chunk);
    total += chunk.length;
    if (total < need) continue;
    const buf = chunks.length === 1 ? chunks[0] : concat(chunks, total);
    let at = 0;
    need = 8;
    while (buf.length - at >= 8) {
      const view = new DataView(buf.buffer, buf.byteOffset + at, 8);
      const headLen = view.getUint32(0);
      const bodyLen = view.getUint32(4);
      if (headLen + bodyLen > MAX_FRAME) throw new Error(`serving pipe: frame of ${headLen + bodyLen} bytes`);
      if (buf.length - at < 8 + headLen + bodyLen) {
        need = 8 + headLen + bodyLen;
        break;
      }
      const head = buf.subarray(at + 8, at + 8 + headLen);
      const header = JSON.parse(new TextDecoder().decode(head)) as T;
      const body = buf.slice(at + 8 + headLen, at + 8 + headLen + bodyLen);
      at += 8 + headLen + bodyLen;
      yield { header, body };
    }
    chunks = at === buf.length ? [] : [buf.subarray(at)];
    total = buf.length - at;
  }
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Writes frames in order to a byte stream; a write after the stream broke is dropped. */
export class FrameWriter {
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  #broken = false;

  /** @param stream the pipe to the peer */
  constructor(stream: WritableStream<Uint8Array>) {
    this.#writer = stream.getWriter();
  }

  /** Whether the pipe broke (the peer is gone). */
  get broken(): boolean {
    return this.#broken;
  }

  /** Queues a frame. */
  send(header: ToChild | FromChild, body?: Uint8Array): void {
    if (this.#broken) return;
    this.#writer.write(encodeFrame(header, body)).catch(() => (this.#broken = true));
  }

  /** Closes the pipe. */
  async close(): Promise<void> {
    this.#broken = true;
    await this.#writer.close().catch(() => {});
  }
}
