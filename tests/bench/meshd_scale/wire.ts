/**
 * Just enough of the delta ADS wire for the scale bench's simulated proxies, so that 25,000 of them
 * fit in a few processes: gRPC message framing, DeltaDiscoveryRequest encoding, and a
 * DeltaDiscoveryResponse reader that skips resource bodies (it reads names and versions only when
 * asked). Field numbers: envoy/service/discovery/v3/discovery.proto, envoy/config/core/v3/base.proto.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function varint(out: number[], n: number): void {
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
}

function field(out: number[], number: number, bytes: Uint8Array | number[]): void {
  varint(out, (number << 3) | 2);
  varint(out, bytes.length);
  for (const b of bytes) out.push(b);
}

/** A DeltaDiscoveryRequest (node id only on the first), framed as one gRPC message. */
export function deltaRequest(r: { nodeId?: string; typeUrl: string; nonce?: string }): Uint8Array {
  const body: number[] = [];
  if (r.nodeId !== undefined) {
    const node: number[] = [];
    field(node, 1, encoder.encode(r.nodeId));
    field(body, 1, node);
  }
  field(body, 2, encoder.encode(r.typeUrl));
  if (r.nonce !== undefined) field(body, 6, encoder.encode(r.nonce));
  const framed = new Uint8Array(5 + body.length);
  new DataView(framed.buffer).setUint32(1, body.length);
  framed.set(body, 5);
  return framed;
}

/** What the bench reads of a DeltaDiscoveryResponse. */
export interface DeltaSummary {
  typeUrl: string;
  nonce: string;
  /** Number of resources carried. */
  resources: number;
  /** Where each Resource message lies in the buffer, for {@link resourceNames}. */
  spans: [number, number][];
}

function readVarint(b: Uint8Array, at: number): [number, number] {
  let n = 0, shift = 0;
  while (true) {
    const byte = b[at++];
    n += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [n, at];
    shift += 7;
  }
}

/** Iterates over the fields of a message: [field number, wire type, start, end] of each value. */
function* fields(b: Uint8Array, from: number, to: number): Generator<[number, number, number, number]> {
  let at = from;
  while (at < to) {
    const [tag, next] = readVarint(b, at);
    const wire = tag & 7;
    at = next;
    if (wire === 2) {
      const [len, start] = readVarint(b, at);
      yield [tag >>> 3, wire, start, start + len];
      at = start + len;
    } else if (wire === 0) {
      const [, end] = readVarint(b, at);
      yield [tag >>> 3, wire, at, end];
      at = end;
    } else if (wire === 5) at += 4;
    else if (wire === 1) at += 8;
    else throw new Error(`wire type ${wire} not expected in DeltaDiscoveryResponse`);
  }
}

/** The type, nonce and resource count of a DeltaDiscoveryResponse message body. */
export function readDelta(b: Uint8Array): DeltaSummary {
  const s: DeltaSummary = { typeUrl: "", nonce: "", resources: 0, spans: [] };
  for (const [n, , start, end] of fields(b, 0, b.length)) {
    if (n === 2) {
      s.resources++;
      s.spans.push([start, end]);
    } else if (n === 4) s.typeUrl = decoder.decode(b.subarray(start, end));
    else if (n === 5) s.nonce = decoder.decode(b.subarray(start, end));
  }
  return s;
}

/** The name and version of each resource of a response read by {@link readDelta}. */
export function resourceNames(b: Uint8Array, s: DeltaSummary): { name: string; version: string }[] {
  return s.spans.map(([from, to]) => {
    let name = "", version = "";
    for (const [n, , start, end] of fields(b, from, to)) {
      if (n === 3) name = decoder.decode(b.subarray(start, end));
      else if (n === 1) version = decoder.decode(b.subarray(start, end));
    }
    return { name, version };
  });
}

/** Splits a byte stream into gRPC messages (5-byte prefix: compressed flag, big-endian length). */
export class MessageReader {
  #buf = new Uint8Array(0);

  /** Adds bytes; returns the complete messages they finish. */
  push(chunk: Uint8Array): Uint8Array[] {
    let buf = chunk;
    if (this.#buf.length > 0) {
      buf = new Uint8Array(this.#buf.length + chunk.length);
      buf.set(this.#buf);
      buf.set(chunk, this.#buf.length);
    }
    const out: Uint8Array[] = [];
    let at = 0;
    while (buf.length - at >= 5) {
      const len = new DataView(buf.buffer, buf.byteOffset + at + 1, 4).getUint32(0);
      if (buf.length - at - 5 < len) break;
      out.push(buf.subarray(at + 5, at + 5 + len));
      at += 5 + len;
    }
    this.#buf = at === buf.length ? new Uint8Array(0) : buf.slice(at);
    return out;
  }
}
