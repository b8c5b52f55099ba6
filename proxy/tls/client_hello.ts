/**
 * The server name (SNI, RFC 6066 section 3) and ALPN list (RFC 7301 section 3.1) of a TLS
 * ClientHello, read from the first bytes of a connection before any TLS library sees them, as Envoy's
 * `tls_inspector` does for filter chain matches: a gateway listener picks the HTTPS server (its
 * certificate, client CA and TLS versions) by `server_names`; a PERMISSIVE inbound port picks mutual
 * TLS by Istio's `application_protocols` (../inbound/front.ts, ./mesh_alpn.ts).
 * Layout: RFC 8446 section 4.1.2 (TLS 1.3) and RFC 5246 section 7.4.1.2 (TLS 1.2).
 *
 * @module
 */
import type net from "node:net";

/** What the bytes so far say. */
export type ClientHelloInfo =
  /** The first record is not complete yet: read more. */
  | { status: "more" }
  /**
   * A ClientHello: its host_name (lower case), or undefined without the extension; the protocol
   * names of its ALPN extension in the client's order (latin1), empty without the extension.
   */
  | { status: "done"; sni: string | undefined; alpn: string[] }
  /** Not a TLS ClientHello (plain text, garbage, or one split over several records). */
  | { status: "invalid"; reason: string };

/** The `invalid` reason of bytes that do not start a TLS handshake record (plain text, another protocol). */
export const NOT_TLS = "not a TLS handshake record";

/** The largest TLS record (2^14 bytes plus the 5-byte header and expansion), in bytes. */
export const MAX_RECORD_BYTES = 16384 + 2048 + 5;

/**
 * Reads the SNI and ALPN of the ClientHello at the start of `bytes`. A malformed extension (a
 * length running past its end) makes the whole ClientHello `invalid`.
 *
 * @param bytes everything received on the connection so far
 */
export function parseClientHello(bytes: Uint8Array): ClientHelloInfo {
  if (bytes.length === 0) return { status: "more" };
  if (bytes[0] !== 0x16) return { status: "invalid", reason: NOT_TLS };
  if (bytes.length < 5) return { status: "more" };
  const recordLength = (bytes[3] << 8) | bytes[4];
  if (bytes.length < 5 + recordLength) return { status: "more" };
  const r = new Reader(bytes.subarray(5, 5 + recordLength));
  try {
    if (r.u8() !== 1) {
      return { status: "invalid", reason: "the first handshake message is not a ClientHello" };
    }
    const length = r.u24();
    if (length > recordLength - 4) {
      return { status: "invalid", reason: "the ClientHello is split over several records" };
    }
    r.skip(2 + 32); // legacy_version, random
    r.skip(r.u8()); // legacy_session_id
    r.skip(r.u16()); // cipher_suites
    r.skip(r.u8()); // legacy_compression_methods
    let sni: string | undefined;
    const alpn: string[] = [];
    if (r.done()) return { status: "done", sni, alpn };
    const extensions = new Reader(r.take(r.u16()));
    while (!extensions.done()) {
      const type = extensions.u16();
      const body = new Reader(extensions.take(extensions.u16()));
      if (type === SERVER_NAME && sni === undefined) sni = hostName(body);
      if (type === ALPN && alpn.length === 0) {
        const list = new Reader(body.take(body.u16()));
        while (!list.done()) alpn.push(String.fromCharCode(...list.take(list.u8())));
      }
    }
    return { status: "done", sni, alpn };
  } catch {
    return { status: "invalid", reason: "malformed ClientHello" };
  }
}

/** Extension types (RFC 8446 section 4.2). */
const SERVER_NAME = 0;
const ALPN = 16;

/** The host_name of a server_name extension's body, undefined when it names none. */
function hostName(body: Reader): string | undefined {
  const list = new Reader(body.take(body.u16()));
  while (!list.done()) {
    const nameType = list.u8();
    const name = list.take(list.u16());
    if (nameType === 0) return String.fromCharCode(...name).toLowerCase();
  }
  return undefined;
}

/** A bounds-checked cursor; reading past the end throws. */
class Reader {
  #at = 0;
  constructor(readonly bytes: Uint8Array) {}
  done(): boolean {
    return this.#at >= this.bytes.length;
  }
  take(n: number): Uint8Array {
    if (this.#at + n > this.bytes.length) throw new RangeError("truncated");
    const out = this.bytes.subarray(this.#at, this.#at + n);
    this.#at += n;
    return out;
  }
  skip(n: number): void {
    this.take(n);
  }
  u8(): number {
    return this.take(1)[0];
  }
  u16(): number {
    const b = this.take(2);
    return (b[0] << 8) | b[1];
  }
  u24(): number {
    const b = this.take(3);
    return (b[0] << 16) | (b[1] << 8) | b[2];
  }
}

/** The chunks as one array (the chunk itself when there is one). */
export function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(size);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

/**
 * What {@link readClientHello} found; except after `closed`, the bytes read are back in the socket
 * (`unshift`), which is paused.
 */
export type ReadClientHello =
  | ClientHelloInfo
  /** The connection ended or closed first; it is destroyed. */
  | { status: "closed"; reason: string }
  /** No whole first record in time (a server-first protocol, a slow client); the socket is kept. */
  | { status: "timeout"; reason: string };

/**
 * Reads a connection's first bytes until they hold a whole ClientHello (or show they are not one),
 * then puts them back and pauses the socket, so that whoever takes the connection next (a TLS
 * server, a relay, the HTTP session) reads them again. A socket that ends or closes first is
 * destroyed (`closed`); one without a complete first record within `timeoutMs` (Envoy's
 * `listener_filters_timeout`, 15 s) is `timeout`, within {@link MAX_RECORD_BYTES} `more` (too large).
 */
export function readClientHello(socket: net.Socket, timeoutMs = 15_000): Promise<ReadClientHello> {
  return new Promise((resolve) => {
    let chunks: Uint8Array[] = [];
    let size = 0;
    const joined = (): Uint8Array => {
      const all = concat(chunks, size);
      chunks = [all];
      return all;
    };
    const done = (result: ReadClientHello, keep: boolean): void => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("close", onClose);
      if (keep) {
        socket.pause();
        if (size > 0) socket.unshift(joined());
      } else socket.destroy();
      resolve(result);
    };
    const onData = (chunk: Uint8Array): void => {
      chunks.push(chunk);
      size += chunk.length;
      const hello = parseClientHello(joined());
      if (hello.status === "more" && size < MAX_RECORD_BYTES) return;
      done(hello, true);
    };
    // With allowHalfOpen nothing else would close a connection that ends before its first record.
    const onEnd = (): void =>
      done({ status: "closed", reason: "connection ended before a whole first record" }, false);
    const onClose = (): void => done({ status: "closed", reason: "connection closed" }, false);
    const timer = setTimeout(
      () => done({ status: "timeout", reason: `no whole first record within ${timeoutMs} ms` }, true),
      timeoutMs,
    );
    Deno.unrefTimer(timer);
    socket.on("data", onData);
    socket.once("end", onEnd);
    socket.once("close", onClose);
  });
}
