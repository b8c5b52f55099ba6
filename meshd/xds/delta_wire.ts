/**
 * The protobuf wire form of envoy.service.discovery.v3.DeltaDiscoveryResponse (and of the state of
 * the world's DiscoveryResponse), written directly.
 * Every proxy that receives a resource receives the same `Resource` entry (name, version, Any), so
 * each entry is encoded once per push context and spliced into every stream's response; encoding the
 * envelope through protobufjs for each stream was a third of meshd's CPU at 2,000 proxies.
 * Field numbers: envoy/service/discovery/v3/discovery.proto and google/protobuf/any.proto.
 *
 * @module
 */
import type { GeneratedResource } from "./ads_types.ts";

const encoder = new TextEncoder();

/** Longest string {@link utf8} copies by hand; a longer one goes to TextEncoder, whose op call then pays. */
const SHORT = 128;
/** Strings that every response of a push repeats (type URLs, the push's version): their octets, kept. */
const REPEATED = new Map<string, Uint8Array>();
const REPEATED_MAX = 64;

/**
 * The UTF-8 octets of `s`. A short ASCII string (names, versions, type URLs: what a cold sync encodes
 * per proxy) is copied by hand: TextEncoder's op call cost more than the copy for each of them.
 */
function utf8(s: string): Uint8Array {
  if (s.length > SHORT) return encoder.encode(s);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return encoder.encode(s);
    out[i] = c;
  }
  return out;
}

/** {@link utf8} of a string many responses repeat, kept (a bounded few; callers must not write into it). */
function repeatedUtf8(s: string): Uint8Array {
  let bytes = REPEATED.get(s);
  if (bytes === undefined) {
    bytes = utf8(s);
    if (REPEATED.size >= REPEATED_MAX) REPEATED.clear();
    REPEATED.set(s, bytes);
  }
  return bytes;
}

// DeltaDiscoveryResponse: system_version_info = 1, resources = 2, type_url = 4, nonce = 5,
// removed_resources = 6. Resource: version = 1, resource = 2, name = 3. Any: type_url = 1, value = 2.
const TAG = (field: number) => (field << 3) | 2;

function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n >>>= 7;
    len++;
  }
  return len;
}

function writeVarint(out: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  out[at++] = n;
  return at;
}

/** Length of a length-delimited field holding `len` bytes. */
function fieldLength(field: number, len: number): number {
  return varintLength(TAG(field)) + varintLength(len) + len;
}

function writeField(out: Uint8Array, at: number, field: number, bytes: Uint8Array): number {
  at = writeVarint(out, at, TAG(field));
  at = writeVarint(out, at, bytes.length);
  out.set(bytes, at);
  return at + bytes.length;
}

function concatFields(fields: [number, Uint8Array][]): Uint8Array {
  let size = 0;
  for (const [f, b] of fields) size += fieldLength(f, b.length);
  const out = new Uint8Array(size);
  let at = 0;
  for (const [f, b] of fields) at = writeField(out, at, f, b);
  return out;
}

const ENTRIES = new WeakMap<GeneratedResource, { typeUrl: string; bytes: Uint8Array }>();
const ANYS = new WeakMap<GeneratedResource, { typeUrl: string; bytes: Uint8Array }>();

/** The encoded google.protobuf.Any of a generated resource, cached for as long as the resource lives. */
function anyOf(typeUrl: string, r: GeneratedResource): Uint8Array {
  const hit = ANYS.get(r);
  if (hit && hit.typeUrl === typeUrl) return hit.bytes;
  const bytes = concatFields([[1, repeatedUtf8(typeUrl)], [2, r.body]]);
  ANYS.set(r, { typeUrl, bytes });
  return bytes;
}

/** The encoded `Resource` message of a generated resource, cached for as long as the resource lives. */
export function resourceEntry(typeUrl: string, r: GeneratedResource): Uint8Array {
  const hit = ENTRIES.get(r);
  if (hit && hit.typeUrl === typeUrl) return hit.bytes;
  const bytes = concatFields([[1, utf8(r.version)], [2, anyOf(typeUrl, r)], [3, utf8(r.name)]]);
  ENTRIES.set(r, { typeUrl, bytes });
  return bytes;
}

/**
 * A state-of-the-world DiscoveryResponse without its nonce (version_info = 1, resources = 2,
 * type_url = 4; the nonce, 5, is the last field): {@link withNonce} makes the bytes of one.
 */
export function encodeSotwParts(
  response: { versionInfo: string; typeUrl: string; resources: readonly GeneratedResource[] },
): DeltaResponseParts {
  const head: [number, Uint8Array][] = [[1, repeatedUtf8(response.versionInfo)]];
  for (const r of response.resources) head.push([2, anyOf(response.typeUrl, r)]);
  head.push([4, repeatedUtf8(response.typeUrl)]);
  return { head: concatFields(head), tail: new Uint8Array() };
}

/**
 * A DeltaDiscoveryResponse without its nonce: the fields before the nonce (field 5) and those after,
 * so that one encoding serves every stream that sends the same response and only the nonce is spliced
 * in per stream ({@link withNonce}).
 */
export interface DeltaResponseParts {
  head: Uint8Array;
  tail: Uint8Array;
}

/** The parts of a DeltaDiscoveryResponse: {@link withNonce} makes the bytes of one. */
export function encodeDeltaParts(
  response: { systemVersionInfo: string; typeUrl: string; entries: Uint8Array[]; removed: string[] },
): DeltaResponseParts {
  const head: [number, Uint8Array][] = [[1, repeatedUtf8(response.systemVersionInfo)]];
  for (const e of response.entries) head.push([2, e]);
  head.push([4, repeatedUtf8(response.typeUrl)]);
  return {
    head: concatFields(head),
    tail: concatFields(response.removed.map((name) => [6, utf8(name)])),
  };
}

/** The bytes of a response: its parts with the nonce field between them, in field order. */
export function withNonce(parts: DeltaResponseParts, nonce: string): Uint8Array {
  const n = encoder.encode(nonce);
  const out = new Uint8Array(parts.head.length + fieldLength(5, n.length) + parts.tail.length);
  out.set(parts.head, 0);
  const at = writeField(out, parts.head.length, 5, n);
  out.set(parts.tail, at);
  return out;
}

/** The octets of `nonce` when it is ASCII (what meshd's nonces are), else undefined. */
function asciiLength(nonce: string): number | undefined {
  for (let i = 0; i < nonce.length; i++) if (nonce.charCodeAt(i) >= 0x80) return undefined;
  return nonce.length;
}

/**
 * A response with its nonce, as the chunks that make it: the nonce field, then the parts shared by
 * every stream that sends the response. Protobuf fields may come in any order, so the chunks in a row
 * are a valid message; a transport that writes them as they are (meshd/server/grpc_codec) copies only
 * the nonce per stream. {@link join} gives the bytes {@link withNonce} gives (grpc-js, serving children).
 */
export class NoncedBytes {
  /** The parts shared by every stream that sends the response, in order (empty ones left out). */
  readonly shared: readonly Uint8Array[];
  /** Octets in all. */
  readonly length: number;
  readonly #parts: DeltaResponseParts;
  readonly #nonce: string;
  /** The nonce's UTF-8 octets, only for a nonce that is not ASCII. */
  readonly #utf8: Uint8Array | undefined;
  readonly #nonceBytes: number;

  constructor(parts: DeltaResponseParts, nonce: string) {
    this.#parts = parts;
    this.#nonce = nonce;
    const ascii = asciiLength(nonce);
    this.#utf8 = ascii === undefined ? encoder.encode(nonce) : undefined;
    this.#nonceBytes = ascii ?? this.#utf8!.length;
    this.shared = parts.tail.length > 0 ? [parts.head, parts.tail] : [parts.head];
    this.length = fieldLength(5, this.#nonceBytes) + parts.head.length + parts.tail.length;
  }

  /**
   * The nonce field (field 5) in a new buffer after `reserve` octets left for the caller (a gRPC
   * message prefix): one allocation per stream and response, the only bytes not shared.
   */
  nonceField(reserve = 0): Uint8Array {
    const n = this.#nonceBytes;
    const out = new Uint8Array(reserve + fieldLength(5, n));
    let at = writeVarint(out, reserve, TAG(5));
    at = writeVarint(out, at, n);
    if (this.#utf8 !== undefined) out.set(this.#utf8, at);
    else for (let i = 0; i < n; i++) out[at + i] = this.#nonce.charCodeAt(i);
    return out;
  }

  /** The nonce field, then the shared parts: the message's bytes when written in a row. */
  get chunks(): readonly Uint8Array[] {
    return [this.nonceField(), ...this.shared];
  }

  /** One buffer, in field order. */
  join(): Uint8Array {
    return withNonce(this.#parts, this.#nonce);
  }
}

/** A DeltaDiscoveryResponse, as bytes ready for the wire. */
export function encodeDeltaResponse(
  response: {
    systemVersionInfo: string;
    typeUrl: string;
    entries: Uint8Array[];
    removed: string[];
    nonce: string;
  },
): Uint8Array {
  return withNonce(encodeDeltaParts(response), response.nonce);
}
