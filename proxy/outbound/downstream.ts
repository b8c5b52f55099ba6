/**
 * The outbound listener's two sides of a request for ../http's {@link Http1Session}: the downstream
 * connection, which reads each request head itself while the session waits for one, routes it and
 * hands the session the (possibly rewritten) head; and the session's {@link Upstream} for the
 * current request, which gives the routed pool's connections, or the proxy's own answer as a canned
 * response on an in-memory connection (the session answers a failed connect only with its own 503).
 *
 * @module
 */
import type net from "node:net";
import { Duplex } from "node:stream";
import { ascii } from "../http/chars.ts";
import { concat } from "../tls/client_hello.ts";
import { ConnectionClock } from "../http/conn_limits.ts";
import type { HeadParser } from "../http/head.ts";
import { HttpError, type HttpHead } from "../http/http_head.ts";
import type { Http1Session } from "../http/session.ts";
import type { Upstream } from "../http/session_types.ts";
import { NodeSocketIo, type SocketIo } from "../http/socket_io.ts";
import { DialError, type EndpointPool } from "./endpoint_pool.ts";
import type { LocalReplyKind } from "./outbound_stats.ts";
import { NO_ROUTE, type Route, type Routed } from "./router.ts";

export { concat };

/**
 * The downstream connection: while the session waits for a request head, reads the head itself,
 * routes it and gives the session the (possibly rewritten) head; body bytes pass through.
 */
export class RoutingDownstream extends NodeSocketIo {
  session: Http1Session | null = null;
  closing = false;
  clock = new ConnectionClock(Date.now());
  readonly upstream: RouteUpstream;
  readonly #route: (h: HttpHead) => Routed;
  #held: Uint8Array[] = [];

  constructor(raw: net.Socket, upstream: RouteUpstream, route: (h: HttpHead) => Routed) {
    super(raw);
    this.#route = route;
    this.upstream = upstream;
  }

  /**
   * While the session waits for a request head: the head, read and parsed on the session's own
   * parser and routed. An unchanged head that came in one read is handed over (the session takes the
   * parse as it is); a rewritten one, or a copy of one that spanned reads, is given to the session to
   * parse.
   */
  override read(): Uint8Array | null | undefined {
    const s = this.session;
    if (s === null || s.waitingSince === 0) return super.read();
    const p = s.requestParser;
    for (;;) {
      const c = super.read();
      if (c === undefined) return undefined;
      if (c === null) {
        this.#held = [];
        p.reset();
        return null;
      }
      this.#held.push(c);
      let off: number;
      try {
        off = p.feed(c);
      } catch (e) {
        if (!(e instanceof HttpError)) throw e;
        // The session's parser meets the same bytes again and answers (400, 431, ...).
        return this.#release(p);
      }
      if (off < 0) continue;
      if (off < c.length) this.unread(c.subarray(off));
      const h = p.head;
      const routed = this.#route(h);
      this.upstream.route = routed.route;
      this.#held = [];
      if (routed.head !== null) {
        p.reset();
        return routed.head;
      }
      if (h.shared) {
        // A head that spanned reads lies in the parser's buffer, which the next head reuses: the
        // session parses a copy (and may forward that copy as it is), as before the hand-over.
        p.reset();
        return h.buf.slice(h.start, h.end);
      }
      p.handOver();
      return h.buf.subarray(h.start, h.end);
    }
  }

  #release(p: HeadParser): Uint8Array {
    const held = this.#held;
    this.#held = [];
    p.reset();
    return concat(held, held.reduce((n, c) => n + c.length, 0));
  }
}

/** The session's upstream for the current request of one connection. */
export class RouteUpstream implements Upstream {
  route: Route = NO_ROUTE;
  readonly #owner = new WeakMap<SocketIo, EndpointPool>();
  readonly #onFailure: (kind: LocalReplyKind, reason: string, target: string) => void;

  constructor(onFailure: (kind: LocalReplyKind, reason: string, target: string) => void) {
    this.#onFailure = onFailure;
  }

  /** The routed request's route timeout (a gateway route's VirtualService `http[].timeout`). */
  get routeTimeoutMs(): number {
    const r = this.route;
    return r.local ? 0 : r.timeoutMs ?? 0;
  }

  idle(): SocketIo | null {
    const r = this.route;
    if (r.local) return null;
    const io = r.pool.idle();
    if (io !== null) this.#owner.set(io, r.pool);
    return io;
  }

  async connect(): Promise<SocketIo> {
    const r = this.route;
    if (r.local) return cannedResponse(r.status, r.body, r.location);
    try {
      const io = await r.pool.connect();
      this.#owner.set(io, r.pool);
      return io;
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      const kind = e instanceof DialError ? e.kind : "connect_failure";
      this.#onFailure(kind, reason, r.target);
      return cannedResponse(kind === "timeout" ? 504 : 502, `upstream connect error (${kind}): ${reason}`);
    }
  }

  release(io: SocketIo, reusable: boolean): void {
    const pool = this.#owner.get(io);
    if (pool === undefined) {
      io.destroy();
      return;
    }
    this.#owner.delete(io);
    pool.release(io, reusable);
  }
}

const REASONS: Record<number, string> = {
  301: "Moved Permanently",
  400: "Bad Request",
  404: "Not Found",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** An in-memory connection that answers with one response and ignores what is written to it. */
function cannedResponse(status: number, body: string, location?: string): SocketIo {
  const bodyBytes = new TextEncoder().encode(body === "" ? "" : body + "\n");
  const head = `HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}\r\ncontent-length: ${bodyBytes.length}\r\n` +
    (location === undefined ? "" : `location: ${location}\r\n`) +
    "content-type: text/plain\r\nx-mesh-local-reply: true\r\n\r\n";
  const d = new Duplex({
    read() {},
    write(_chunk, _enc, cb) {
      cb();
    },
  });
  const io = new NodeSocketIo(d as unknown as net.Socket);
  const msg = new Uint8Array(head.length + bodyBytes.length);
  msg.set(ascii(head), 0);
  msg.set(bodyBytes, head.length);
  d.push(msg);
  d.push(null);
  return io;
}
