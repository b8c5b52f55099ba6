/**
 * gRPC's length-prefixed messages (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md,
 * "Length-Prefixed-Message"): a compressed flag octet, a 4-octet big-endian length, the message. The
 * reader turns DATA chunks of any size into whole messages and refuses what meshd does not take: a
 * compressed message (meshd offers only `identity`) and a message over the receive limit
 * (`--grpcMaxRecvMsgSize`-like `maxRecvMessageBytes`, grpc-js's default 4 MiB), both checked on the
 * prefix, before the message is buffered; a message's memory grows with the octets received, not
 * with the length its prefix announces. Also `grpc-message`'s percent-encoding, both ways. meshd's gRPC
 * server and the proxy's gRPC local replies and agent use them.
 *
 * @module
 */

/** gRPC status codes used here (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
export const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** Octets of a message prefix. */
export const PREFIX_BYTES = 5;

/** A refused message: the status the call ends with. */
export interface MessageError {
  code: number;
  details: string;
}

/** What {@link MessageReader.push} yields: whole messages, or the error that ends the call. */
export type ReadResult = { messages: Uint8Array[]; error?: MessageError };

/** Reassembles messages from DATA chunks; see the module doc. */
export class MessageReader {
  readonly #max: number;
  /** Whether the client named a compression (grpc-encoding other than identity). */
  readonly #encoding: string;
  #prefix = new Uint8Array(PREFIX_BYTES);
  #prefixHave = 0;
  /** The parts of the message being received (copies), null between messages. */
  #body: Uint8Array[] | null = null;
  #bodyWant = 0;
  #bodyHave = 0;
  #failed = false;

  /**
   * @param maxBytes largest message accepted, octets
   * @param encoding the request's grpc-encoding header ("" when absent)
   */
  constructor(maxBytes: number, encoding: string) {
    this.#max = maxBytes;
    this.#encoding = encoding;
  }

  /** Whether a partial message is buffered (the client half-closed inside a message: an error). */
  get partial(): boolean {
    return this.#prefixHave > 0 || this.#body !== null;
  }

  /** Consumes one DATA chunk. After an error, nothing more is read. */
  push(chunk: Uint8Array): ReadResult {
    const messages: Uint8Array[] = [];
    if (this.#failed) return { messages };
    let at = 0;
    while (at < chunk.length) {
      if (this.#body === null) {
        const n = Math.min(PREFIX_BYTES - this.#prefixHave, chunk.length - at);
        this.#prefix.set(chunk.subarray(at, at + n), this.#prefixHave);
        this.#prefixHave += n;
        at += n;
        if (this.#prefixHave < PREFIX_BYTES) break;
        const error = this.#check();
        if (error) {
          this.#failed = true;
          return { messages, error };
        }
        const length = new DataView(this.#prefix.buffer).getUint32(1);
        this.#prefixHave = 0;
        if (length === 0) {
          messages.push(new Uint8Array(0));
          continue;
        }
        // A whole message inside this chunk is a view: no copy.
        if (chunk.length - at >= length) {
          messages.push(chunk.subarray(at, at + length));
          at += length;
          continue;
        }
        // Memory grows with what arrives, not with what the prefix announces (a peer could announce
        // the maximum in every message and send one octet).
        this.#body = [];
        this.#bodyWant = length;
        this.#bodyHave = 0;
      }
      const n = Math.min(this.#bodyWant - this.#bodyHave, chunk.length - at);
      this.#body.push(chunk.slice(at, at + n));
      this.#bodyHave += n;
      at += n;
      if (this.#bodyHave === this.#bodyWant) {
        messages.push(joined(this.#body, this.#bodyWant));
        this.#body = null;
      }
    }
    return { messages };
  }

  #check(): MessageError | undefined {
    const flag = this.#prefix[0];
    const length = new DataView(this.#prefix.buffer).getUint32(1);
    if (flag === 1) {
      // As grpc-js: a compressed message under identity is a protocol error; a named compression
      // meshd does not offer is not implemented.
      return this.#encoding === "" || this.#encoding === "identity"
        ? { code: Status.INTERNAL, details: "Compressed flag set with identity encoding" }
        : {
          code: Status.UNIMPLEMENTED,
          details: `Received message compressed with unsupported encoding "${this.#encoding}"`,
        };
    }
    if (flag !== 0) return { code: Status.INTERNAL, details: `Invalid message flag ${flag}` };
    if (length > this.#max) {
      return {
        code: Status.RESOURCE_EXHAUSTED,
        details: `Received message larger than max (${length} vs. ${this.#max})`,
      };
    }
    return undefined;
  }
}

function joined(parts: Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(length);
  let o = 0;
  for (const p of parts) out.set(p, o), o += p.length;
  return out;
}

/** The 5-octet prefix of an uncompressed message of `length` octets. */
export function messagePrefix(length: number): Uint8Array {
  const prefix = new Uint8Array(PREFIX_BYTES);
  putMessagePrefix(prefix, length);
  return prefix;
}

/**
 * Writes the prefix of an uncompressed message of `length` octets (below 2^32) into the first 5
 * octets of `out`, so that the prefix and what follows it share one buffer.
 */
export function putMessagePrefix(out: Uint8Array, length: number): void {
  out[0] = 0;
  out[1] = length >>> 24;
  out[2] = (length >>> 16) & 0xff;
  out[3] = (length >>> 8) & 0xff;
  out[4] = length & 0xff;
}

const HEX = "0123456789ABCDEF";

/**
 * `grpc-message` encoding (PROTOCOL-HTTP2.md): the UTF-8 bytes of `text`, each byte outside
 * 0x20-0x7E and `%` itself written as `%XX` (upper-case hex), everything else as is.
 */
export function percentEncodeGrpcMessage(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let out = "";
  for (const b of bytes) {
    if (b >= 0x20 && b <= 0x7e && b !== 0x25) out += String.fromCharCode(b);
    else out += "%" + HEX[b >> 4] + HEX[b & 15];
  }
  return out;
}

/** The reverse of {@link percentEncodeGrpcMessage}; a malformed `%` sequence is kept as it is (gRPC's rule). */
export function percentDecodeGrpcMessage(encoded: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < encoded.length; i++) {
    const c = encoded.charCodeAt(i);
    if (c === 0x25 && i + 2 < encoded.length && /^[0-9A-Fa-f]{2}$/.test(encoded.slice(i + 1, i + 3))) {
      bytes.push(parseInt(encoded.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(c & 0xff);
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}
