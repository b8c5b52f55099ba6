/**
 * THE byte relay of every TCP path of the proxy (inbound and outbound TCP, passthrough, TLS
 * passthrough): copies bytes both ways between two connected sockets until both directions are
 * done, as Envoy's tcp_proxy network filter does.
 *
 * - Byte for byte, with backpressure: a side whose `write()` returns false pauses the other side's
 *   reads until `'drain'`.
 * - Half-close: an `'end'` (FIN) from one side ends the other side's write side; the other direction
 *   keeps flowing until it ends too. Both sockets must be created with `allowHalfOpen: true` (for a
 *   node:tls socket: the underlying net.Socket and the TLSSocket), or node closes them on the first FIN.
 * - Reset propagation: an error or an abrupt close on one side (ECONNRESET, a write to a closed peer,
 *   a destroy) closes the other side with a TCP reset (`resetAndDestroy()`, SO_LINGER 0), as Envoy
 *   does since 1.29 (`envoy.reloadable_features.detect_and_raise_rst_tcp_connection`).
 * - Idle timeout: no byte in either direction for `idleTimeoutMs` closes both sides (Envoy
 *   tcp_proxy `idle_timeout`, default 1 h; 0 disables it).
 *
 * Works for node:net sockets and node:tls TLSSockets (a server-side TLSSocket made over an accepted
 * net.Socket is reset through that socket; a TLSSocket is paused through the TCP handle under its
 * TLS layer, see {@link pauseReading}). When the returned promise settles, both sockets are
 * destroyed, the timer is cleared and every listener the relay added is removed, except one no-op
 * `'error'` listener per socket, kept so that a late error on a destroyed socket cannot become an
 * uncaught exception.
 *
 * @module
 */
import type { EventEmitter } from "node:events";
import { Readable } from "node:stream";
import type net from "node:net";

/** Which way bytes went: from the downstream (the side that connected to the proxy) to the upstream, or back. */
export type RelayDirection = "downstream_to_upstream" | "upstream_to_downstream";

/**
 * How a relay ended: `closed` (both sides sent FIN), `reset` (a side reset or failed; the other was
 * reset), `idle_timeout` (no byte for `idleTimeoutMs`), `aborted` (the signal fired).
 */
export type RelayEnd = "closed" | "reset" | "idle_timeout" | "aborted";

/** The outcome of {@link relay}; the promise never rejects. */
export interface RelayResult {
  /** Bytes read from the downstream and written to the upstream. */
  bytesFromDownstream: number;
  /** Bytes read from the upstream and written to the downstream. */
  bytesFromUpstream: number;
  end: RelayEnd;
  /**
   * Who ended first: for `closed`, the side whose FIN came first; for `reset`, the side that reset or
   * failed; `proxy` for `idle_timeout` and `aborted`.
   */
  by: "downstream" | "upstream" | "proxy";
  /** The error (message and code, if any) of the side that failed, for `reset`. */
  error?: string;
}

/** Options of {@link relay}. */
export interface RelayOptions {
  /** Close both sides after this many milliseconds without a byte either way; 0 disables. Default 1 h. */
  idleTimeoutMs?: number;
  /** Aborting closes both sides at once (plain destroy) and settles with `aborted`. */
  signal?: AbortSignal;
  /** Called for every chunk relayed, with its size in bytes (metrics). Must not throw. */
  onBytes?(direction: RelayDirection, n: number): void;
}

/** Envoy tcp_proxy's default idle_timeout: 1 hour. */
export const DEFAULT_TCP_IDLE_TIMEOUT_MS = 3_600_000;

const ignore = (): void => {};

/** An event listener as node's typings declare it. */
type Listener = Parameters<EventEmitter["on"]>[1];

/**
 * Resets a socket (TCP RST): a server-side TLSSocket through the net.Socket it wraps, a client
 * TLSSocket or net.Socket through its own handle; a plain destroy where no reset is possible.
 */
export function resetSocket(socket: net.Socket): void {
  const parent = (socket as unknown as { _parent?: net.Socket | null })._parent;
  for (const s of parent ? [parent, socket] : [socket]) {
    if (s.destroyed) continue;
    try {
      s.resetAndDestroy();
    } catch {
      s.destroy();
    }
  }
}

/** The TCP handle under a node:tls socket's TLS layer in Deno (`_handle._nativeTcpHandle`), if any. */
interface RawReader {
  readStop(): unknown;
  readStart(): unknown;
}

function transportOf(socket: net.Socket): RawReader | null {
  const handle = (socket as unknown as { _handle?: { _nativeTcpHandle?: RawReader } | null })._handle;
  const tcp = handle?._nativeTcpHandle;
  return tcp && typeof tcp.readStop === "function" && typeof tcp.readStart === "function" ? tcp : null;
}

/** TLS sockets whose TCP handle {@link pauseReading} stopped. */
const stopped = new WeakSet<net.Socket>();

/**
 * Stops reading from `socket` (backpressure, or holding it between protocol detection and the path
 * that serves it); {@link resumeReading} undoes it. A node:tls socket is paused as a stream (no
 * `'data'` events; what the TLS layer already decrypted is buffered) and its TCP handle under the
 * TLS layer stops reading, instead of `pause()` on the TLSSocket: in Deno 2.9, a TLSSocket that was
 * ever paused with `pause()` (its TLSWrap's `readStop()`) never reports the peer's FIN afterwards (no
 * `'end'`, the socket stays in CLOSE-WAIT and a relay would hang half-open), whereas stopping the TCP
 * handle keeps the FIN path intact. Found with 32 MiB through a server-side TLSSocket paused once
 * (relay_test.ts, the mutual TLS cases, fail with a plain `pause()`).
 */
export function pauseReading(socket: net.Socket): void {
  const tcp = transportOf(socket);
  if (tcp === null) {
    socket.pause();
    return;
  }
  Readable.prototype.pause.call(socket);
  if (!stopped.has(socket)) {
    tcp.readStop();
    stopped.add(socket);
  }
}

/** Undoes {@link pauseReading}; also puts a paused stream into flowing mode. */
export function resumeReading(socket: net.Socket): void {
  if (socket.destroyed) return;
  socket.resume();
  if (!stopped.delete(socket)) return;
  transportOf(socket)?.readStart();
}

interface Side {
  readonly name: "downstream" | "upstream";
  readonly socket: net.Socket;
  readonly direction: RelayDirection;
  ended: boolean;
  finished: boolean;
  closed: boolean;
}

/**
 * Relays bytes between `downstream` and `upstream` (both connected, both `allowHalfOpen`) until both
 * directions have ended, a side resets, the idle timeout passes or `signal` aborts. Bytes one side
 * already has buffered (for example `unshift`ed after protocol detection) are relayed first; paused
 * sockets are resumed.
 */
export function relay(
  downstream: net.Socket,
  upstream: net.Socket,
  options: RelayOptions = {},
): Promise<RelayResult> {
  const idleMs = options.idleTimeoutMs ?? DEFAULT_TCP_IDLE_TIMEOUT_MS;
  const onBytes = options.onBytes;
  const down: Side = {
    name: "downstream",
    socket: downstream,
    direction: "downstream_to_upstream",
    ended: false,
    finished: false,
    closed: false,
  };
  const up: Side = {
    name: "upstream",
    socket: upstream,
    direction: "upstream_to_downstream",
    ended: false,
    finished: false,
    closed: false,
  };
  const bytes = { downstream: 0, upstream: 0 };
  let lastActivity = Date.now();
  let outcome: { end: RelayEnd; by: RelayResult["by"]; error?: string } | null = null;
  let firstFin: "downstream" | "upstream" | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const removers: Array<() => void> = [];
  let resolve!: (r: RelayResult) => void;
  const done = new Promise<RelayResult>((r) => (resolve = r));

  const on = (s: net.Socket, event: string, fn: Listener): void => {
    s.on(event, fn);
    removers.push(() => s.off(event, fn));
  };

  const finish = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    for (const remove of removers.splice(0)) remove();
    options.signal?.removeEventListener("abort", onAbort);
    if (!downstream.destroyed) downstream.destroy();
    if (!upstream.destroyed) upstream.destroy();
    const o = outcome ?? { end: "closed", by: firstFin ?? "downstream" };
    resolve({
      bytesFromDownstream: bytes.downstream,
      bytesFromUpstream: bytes.upstream,
      end: o.end,
      by: o.by,
      ...(o.error === undefined ? {} : { error: o.error }),
    });
  };

  const settleIfDone = (): void => {
    if (down.closed && up.closed) finish();
  };

  /** Ends the relay abruptly: `failed` reset or failed, so the other side gets a reset. */
  const fail = (failed: Side, error: string | undefined): void => {
    if (outcome !== null) return;
    outcome = { end: "reset", by: failed.name, ...(error === undefined ? {} : { error }) };
    resetSocket(failed.socket);
    resetSocket(failed === down ? upstream : downstream);
  };

  const stopBoth = (end: "idle_timeout" | "aborted"): void => {
    if (outcome !== null) return;
    outcome = { end, by: "proxy" };
    downstream.destroy();
    upstream.destroy();
  };

  const onAbort = (): void => stopBoth("aborted");

  const wire = (from: Side, to: Side): void => {
    const src = from.socket;
    const dst = to.socket;
    const resume = (): void => resumeReading(src);
    src.on("error", ignore);
    on(src, "data", (chunk: Uint8Array) => {
      lastActivity = Date.now();
      bytes[from.name] += chunk.byteLength;
      onBytes?.(from.direction, chunk.byteLength);
      if (!dst.write(chunk)) {
        pauseReading(src);
        dst.once("drain", resume);
        removers.push(() => dst.off("drain", resume));
      }
    });
    on(src, "end", () => {
      from.ended = true;
      firstFin ??= from.name;
      if (!dst.destroyed) dst.end();
      if (from.finished) src.destroy();
    });
    on(src, "finish", () => {
      from.finished = true;
      if (from.ended) src.destroy();
    });
    on(src, "error", (err: Error & { code?: string }) => {
      const code = err.code;
      fail(
        from,
        code !== undefined && !err.message.includes(code) ? `${err.message} (${code})` : err.message,
      );
    });
    on(src, "close", () => {
      from.closed = true;
      // Closed without a FIN both ways and without an error event: destroyed under us; treat as a reset.
      if (outcome === null && !(from.ended && from.finished)) fail(from, undefined);
      settleIfDone();
    });
  };

  wire(down, up);
  wire(up, down);

  if (idleMs > 0) {
    const check = (): void => {
      const idle = Date.now() - lastActivity;
      if (idle >= idleMs) stopBoth("idle_timeout");
      else timer = setTimeout(check, idleMs - idle);
    };
    timer = setTimeout(check, idleMs);
  }
  if (options.signal !== undefined) {
    if (options.signal.aborted) queueMicrotask(onAbort);
    else options.signal.addEventListener("abort", onAbort, { once: true });
  }
  for (const side of [down, up]) {
    if (side.socket.destroyed) {
      side.closed = true;
      fail(side, "socket already closed");
      continue;
    }
    if (side.socket.readableEnded) {
      // Its FIN came before the relay started (protocol detection read it): pass it on now.
      side.ended = true;
      firstFin ??= side.name;
      (side === down ? upstream : downstream).end();
    }
    resumeReading(side.socket);
  }
  settleIfDone();
  return done;
}
