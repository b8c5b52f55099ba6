/**
 * Just enough of the delta ADS wire for the scale bench's simulated proxies, so that 25,000 of them
 * fit in a few processes and cost little next to meshd: gRPC message framing, DeltaDiscoveryRequest
 * encoding, and a DeltaDiscoveryResponse reader that skips resource bodies and decodes no string it
 * does not need (the type is matched against the known type URLs as bytes, the ACK copies the
 * response's type URL and nonce bytes). Field numbers: envoy/service/discovery/v3/discovery.proto.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The resource types every simulated proxy subscribes to (wildcard). */
export const TYPES: readonly string[] = ["Service", "Workload", "Authorization"].map((t) =>
  `type.googleapis.com/mesh.v1.${t}`
);
/** The index of the Authorization type in {@link TYPES}. */
export const AUTHORIZATION = 2;
const TYPE_BYTES = TYPES.map((t) => encoder.encode(t));

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
  /** Index in {@link TYPES}, or -1 for another type (then read {@link typeUrlOf}). */
  type: number;
  /** Number of resources carried. */
  resources: number;
  /** The type URL's bytes (a view of the message when it came in one chunk). */
  typeUrl: Uint8Array;
  /** The nonce's bytes (likewise). */
  nonce: Uint8Array;
}

const EMPTY = new Uint8Array(0);

/** Reads a varint at `at` of `b`: the value in `varintValue`, the next offset returned. */
let varintValue = 0;
function readVarint(b: Uint8Array, at: number): number {
  let byte = b[at++];
  if (byte < 0x80) {
    varintValue = byte;
    return at;
  }
  let n = byte & 0x7f, scale = 128;
  for (;;) {
    if (at >= b.length) throw new Error("varint runs past the end of the message");
    byte = b[at++];
    n += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      varintValue = n;
      return at;
    }
    scale *= 128;
  }
}

/** The offset after the value of a field of wire type `wire` starting at `at`; `varintValue` holds a length. */
function skipValue(b: Uint8Array, wire: number, at: number): number {
  if (wire === 2) {
    at = readVarint(b, at);
    return at + varintValue;
  }
  if (wire === 0) return readVarint(b, at);
  if (wire === 5) return at + 4;
  if (wire === 1) return at + 8;
  throw new Error(`wire type ${wire} not expected in DeltaDiscoveryResponse`);
}

/** The index in {@link TYPES} of a type URL given as bytes, or -1. */
export function typeIndex(typeUrl: Uint8Array): number {
  for (let i = 0; i < TYPE_BYTES.length; i++) {
    if (sameBytes(typeUrl, 0, typeUrl.length, TYPE_BYTES[i])) return i;
  }
  return -1;
}

function sameBytes(b: Uint8Array, start: number, end: number, want: Uint8Array): boolean {
  if (end - start !== want.length) return false;
  // Type URLs share their prefix: compare from the end.
  for (let i = want.length - 1; i >= 0; i--) if (b[start + i] !== want[i]) return false;
  return true;
}

/** The type, nonce and resource count of a DeltaDiscoveryResponse message body. Throws on a truncated message. */
export function readDelta(b: Uint8Array): DeltaSummary {
  const s: DeltaSummary = { type: -1, resources: 0, typeUrl: EMPTY, nonce: EMPTY };
  let at = 0;
  while (at < b.length) {
    at = readVarint(b, at);
    const tag = varintValue, n = tag >>> 3;
    at = skipValue(b, tag & 7, at);
    if (at > b.length) throw new Error(`field ${n} runs past the end of the message`);
    if (n === 2) s.resources++;
    else if (n === 4) s.typeUrl = b.subarray(at - varintValue, at);
    else if (n === 5) s.nonce = b.subarray(at - varintValue, at);
  }
  s.type = typeIndex(s.typeUrl);
  return s;
}

/** The type URL of a response read by {@link readDelta}. */
export function typeUrlOf(s: DeltaSummary): string {
  return s.type >= 0 ? TYPES[s.type] : decoder.decode(s.typeUrl);
}

/** Bytes of the ACK (a DeltaDiscoveryRequest with the response's type URL and nonce, framed) of a response. */
export function ackLength(s: DeltaSummary): number {
  const t = s.typeUrl.length, n = s.nonce.length;
  return 5 + 1 + varintLength(t) + t + 1 + varintLength(n) + n;
}

/** Octets of `n` (< 2^35) as a varint. */
function varintLength(n: number): number {
  return n < 2 ** 7 ? 1 : n < 2 ** 14 ? 2 : n < 2 ** 21 ? 3 : n < 2 ** 28 ? 4 : 5;
}

function writeVarint(out: Uint8Array, at: number, n: number): number {
  for (; n >= 0x80; n >>>= 7) out[at++] = (n & 0x7f) | 0x80;
  out[at] = n;
  return at + 1;
}

/** Writes the ACK of response `s` into `out` at `at` ({@link ackLength} bytes); returns the offset after it. */
export function writeAck(out: Uint8Array, at: number, s: DeltaSummary): number {
  const len = ackLength(s) - 5;
  out[at] = 0;
  out[at + 1] = len >>> 24;
  out[at + 2] = (len >>> 16) & 255;
  out[at + 3] = (len >>> 8) & 255;
  out[at + 4] = len & 255;
  at += 5;
  out[at++] = (2 << 3) | 2;
  at = writeVarint(out, at, s.typeUrl.length);
  out.set(s.typeUrl, at);
  at += s.typeUrl.length;
  out[at++] = (6 << 3) | 2;
  at = writeVarint(out, at, s.nonce.length);
  out.set(s.nonce, at);
  return at + s.nonce.length;
}

/**
 * Calls `each(start, end)` with where the name (field 3) of each Resource (field 2) of response `b`
 * lies, and the version (field 1) as [vStart, vEnd]; stops when `each` returns true.
 */
function eachResource(
  b: Uint8Array,
  each: (nameStart: number, nameEnd: number, vStart: number, vEnd: number) => boolean,
): void {
  let at = 0;
  while (at < b.length) {
    at = readVarint(b, at);
    const tag = varintValue;
    at = skipValue(b, tag & 7, at);
    if (tag !== ((2 << 3) | 2)) continue;
    const end = at;
    let r = end - varintValue, nameStart = 0, nameEnd = 0, vStart = 0, vEnd = 0;
    while (r < end) {
      r = readVarint(b, r);
      const t = varintValue;
      r = skipValue(b, t & 7, r);
      if (t === ((3 << 3) | 2)) [nameStart, nameEnd] = [r - varintValue, r];
      else if (t === ((1 << 3) | 2)) [vStart, vEnd] = [r - varintValue, r];
    }
    if (each(nameStart, nameEnd, vStart, vEnd)) return;
  }
}

/** The name and version of each resource of a response (the probe's census: every string decoded). */
export function resourceNames(b: Uint8Array): { name: string; version: string }[] {
  const out: { name: string; version: string }[] = [];
  eachResource(b, (ns, ne, vs, ve) => {
    out.push({ name: decoder.decode(b.subarray(ns, ne)), version: decoder.decode(b.subarray(vs, ve)) });
    return false;
  });
  return out;
}

/** A finder of one resource's version in responses: only that resource's version is decoded. */
export function versionFinder(name: string): (b: Uint8Array) => string | undefined {
  const want = encoder.encode(name);
  return (b) => {
    let version: string | undefined;
    eachResource(b, (ns, ne, vs, ve) => {
      if (!sameBytes(b, ns, ne, want)) return false;
      version = decoder.decode(b.subarray(vs, ve));
      return true;
    });
    return version;
  };
}

/** The big-endian length of the gRPC message prefix at `at`. */
export function lengthAt(b: Uint8Array, at: number): number {
  return ((b[at + 1] << 24) >>> 0) + (b[at + 2] << 16) + (b[at + 3] << 8) + b[at + 4];
}

/** The first `total` octets of `parts`, joined. */
export function concat(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    const n = Math.min(p.length, total - o);
    out.set(n === p.length ? p : p.subarray(0, n), o);
    o += n;
    if (o === total) break;
  }
  return out;
}
