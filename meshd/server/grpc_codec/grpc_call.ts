/**
 * One gRPC call on one HTTP/2 stream of the project's codec (shared/internal/http2), presented to
 * meshd's handlers through the serving bridge's frames (../serving/bridge.ts `ChildCalls`): `open`
 * (path, metadata, peer, verified certificate), `data`, `halfclose`, `gone` in; `write`, `end` out and
 * `wrote` back once a write is framed within the HTTP/2 windows (the ADS push slots' flow control).
 * The same handlers serve the serving children, so ads_server, ads_stream and the CA see no change.
 *
 * The stream's request head is checked as gRPC over HTTP/2 says
 * (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md) and as grpc-js answers: a method
 * other than POST is `405`, a content-type other than `application/grpc*` is `415`, an unknown path is
 * trailers-only `grpc-status: 12`. Messages are read by messages.ts (no compression, a size limit).
 *
 * @module
 */
import { NO_ERROR } from "../../../shared/internal/http2/frame.ts";
import type { HeaderList } from "../../../shared/internal/http2/headers.ts";
import type { Http2Stream } from "../../../shared/internal/http2/stream.ts";
import type { FromChild, MethodKind, PeerCertificate, ToChild, Transport } from "../serving/wire.ts";
import { NoncedBytes } from "../../xds/delta_wire.ts";
import {
  type MessageError,
  MessageReader,
  percentEncodeGrpcMessage,
  PREFIX_BYTES,
  putMessagePrefix,
  Status,
} from "../../../shared/internal/grpc/messages.ts";

/** What a call needs of its connection and of meshd. */
export interface CallContext {
  transport: Transport;
  /** The client's address, `host:port`. */
  peer: string;
  /** The verified client certificate (TLS with a certificate only). */
  cert: PeerCertificate | undefined;
  /** The kind of a method path, undefined for a path not served on this listener. */
  kind(path: string): MethodKind | undefined;
  /** Largest request message, octets. */
  maxRecvMessageBytes: number;
  /** meshd's side of the calls (a `ChildCalls`). */
  deliver(frame: FromChild, body: Uint8Array): void;
}

const EMPTY = new Uint8Array(0);
/** Request headers grpc-js's server removes from the metadata it shows handlers. */
const NOT_METADATA = new Set([
  "content-type",
  "te",
  "grpc-timeout",
  "grpc-encoding",
  "grpc-accept-encoding",
  "accept-encoding",
]);
const RESPONSE_HEAD: HeaderList = [[":status", "200"], ["content-type", "application/grpc"], [
  "grpc-accept-encoding",
  "identity",
]];

function header(headers: HeaderList, name: string): string | undefined {
  for (const [n, v] of headers) if (n === name) return v;
  return undefined;
}

/** The call's metadata as the bridge takes it: text values, `-bin` values as their base64 (the wire form). */
function metadataOf(headers: HeaderList): Record<string, string[]> {
  const metadata: Record<string, string[]> = {};
  for (const [name, value] of headers) {
    if (name.startsWith(":") || NOT_METADATA.has(name)) continue;
    // A latin1 string of UTF-8 octets, as the codec keeps header values.
    const text = name.endsWith("-bin")
      ? value
      : new TextDecoder().decode(Uint8Array.from(value, (c) => c.charCodeAt(0)));
    (metadata[name] ??= []).push(text);
  }
  return metadata;
}

/** One call; see the module doc. */
export class GrpcCall {
  readonly id: number;
  readonly #stream: Http2Stream;
  readonly #context: CallContext;
  #kind: MethodKind = "unary";
  #headSent = false;
  #ended = false;
  /** A unary call's request, until the client half-closes. */
  #request: Uint8Array | null = null;

  /** @param id the call's id in the bridge's frames (unique per meshd) */
  constructor(id: number, stream: Http2Stream, context: CallContext) {
    this.id = id;
    this.#stream = stream;
    this.#context = context;
  }

  /**
   * Starts the call: checks the head, then reads messages until the client half-closes. Returns
   * false (the call answered at once, nothing opened) for a refused head.
   */
  start(): boolean {
    const headers = this.#stream.headers;
    if (header(headers, ":method") !== "POST") return this.#refuse("405");
    if (!(header(headers, "content-type") ?? "").startsWith("application/grpc")) return this.#refuse("415");
    const path = header(headers, ":path") ?? "";
    const kind = this.#context.kind(path);
    if (kind === undefined) {
      this.#finish(Status.UNIMPLEMENTED, `The server does not implement the method ${path}`);
      return false;
    }
    this.#kind = kind;
    const c = this.#context;
    if (kind === "bidi") this.#open(path, EMPTY);
    void this.#read(path, new MessageReader(c.maxRecvMessageBytes, header(headers, "grpc-encoding") ?? ""));
    void this.#stream.closed.then(() => c.deliver({ t: "gone", id: this.id }, EMPTY));
    return true;
  }

  /** An answer of meshd's handler. */
  answer(frame: Extract<ToChild, { t: "write" | "end" }>, body: Uint8Array | NoncedBytes): void {
    if (this.#ended) return;
    if (frame.t === "write") return this.#write(body, true);
    if (frame.code === Status.OK && this.#kind === "unary") this.#write(body, false);
    this.#finish(frame.code, frame.details);
  }

  async #read(path: string, reader: MessageReader): Promise<void> {
    const c = this.#context;
    try {
      for (;;) {
        const chunk = await this.#stream.read();
        if (this.#ended) return;
        if (chunk === null) break;
        const { messages, error } = reader.push(chunk);
        for (const m of messages) {
          if (this.#kind === "bidi") c.deliver({ t: "data", id: this.id }, m);
          else if (this.#request !== null) {
            return this.#fail({
              code: Status.UNIMPLEMENTED,
              details: "Received a second request message for server unary call",
            });
          } else this.#request = m;
        }
        if (error) return this.#fail(error);
      }
    } catch {
      return; // Reset or connection gone: `closed` reports it.
    }
    if (reader.partial) {
      return this.#fail({ code: Status.INTERNAL, details: "Incomplete message at the end of the request" });
    }
    if (this.#kind === "bidi") return c.deliver({ t: "halfclose", id: this.id }, EMPTY);
    if (this.#request === null) {
      return this.#fail({
        code: Status.UNIMPLEMENTED,
        details: "Received no request message for server unary call",
      });
    }
    this.#open(path, this.#request);
    this.#request = null;
  }

  /** The call reaches meshd's handler (a unary call's with its request). */
  #open(path: string, request: Uint8Array): void {
    const c = this.#context;
    c.deliver({
      t: "open",
      id: this.id,
      path,
      transport: c.transport,
      peer: c.peer,
      metadata: metadataOf(this.#stream.headers),
      ...(c.cert ? { cert: c.cert } : {}),
    }, request);
  }

  /** A refused message ends the call with its status; meshd's handler sees the call gone. */
  #fail(error: MessageError): void {
    this.#finish(error.code, error.details);
    this.#context.deliver({ t: "gone", id: this.id }, EMPTY);
  }

  /**
   * One message. The prefix goes with the first chunk (a response's small nonce field, one
   * allocation) and the shared chunks are written as they are: the bytes many streams send are never
   * copied per stream. One promise per message, not per chunk.
   */
  #write(body: Uint8Array | NoncedBytes, ack: boolean): void {
    if (!this.#headSent) {
      this.#headSent = true;
      this.#stream.respond(RESPONSE_HEAD);
    }
    const stream = this.#stream;
    let written: Promise<void>;
    if (body instanceof NoncedBytes) {
      const head = body.nonceField(PREFIX_BYTES);
      putMessagePrefix(head, body.length);
      written = stream.writeAll(head, body.shared);
    } else {
      const prefix = new Uint8Array(PREFIX_BYTES);
      putMessagePrefix(prefix, body.length);
      written = stream.writeAll(prefix, [body]);
    }
    if (ack) written.then(() => this.#context.deliver({ t: "wrote", id: this.id }, EMPTY), () => {});
    else written.catch(() => {});
  }

  /** Trailers (or trailers-only when nothing was sent), then a reset if the client still sends. */
  #finish(code: number, details: string): void {
    if (this.#ended) return;
    this.#ended = true;
    const status: HeaderList = [
      ["grpc-status", String(code)],
      ...(details ? [["grpc-message", percentEncodeGrpcMessage(details)] as [string, string]] : []),
    ];
    if (this.#headSent) this.#stream.end(status);
    else {
      this.#headSent = true;
      this.#stream.respond([[":status", "200"], ["content-type", "application/grpc"], ...status], {
        endStream: true,
      });
    }
    this.#resetIfOpen();
  }

  #refuse(status: string): boolean {
    this.#ended = true;
    this.#headSent = true;
    this.#stream.respond([[":status", status]], { endStream: true });
    this.#resetIfOpen();
    return false;
  }

  /**
   * After our END_STREAM, a client that still sends is told to stop (RST_STREAM NO_ERROR, RFC 9113
   * 8.1, as grpc-go does), so its DATA is not read into nothing; the status frames go out first.
   */
  #resetIfOpen(): void {
    const stream = this.#stream;
    queueMicrotask(() => {
      if (stream.localEnded && !stream.remoteEnded && !stream.isClosed) stream.reset(NO_ERROR);
    });
  }
}
