/**
 * The HTTP/1.1 forwarder of one downstream connection: reads request heads with {@link HeadParser},
 * sends each request to an upstream connection from an {@link Upstream} (a keep-alive pool), and
 * streams both bodies chunk by chunk (never a whole body in memory): Content-Length and chunked as
 * received, close-delimited responses re-chunked for HTTP/1.1 clients, chunked responses decoded for
 * HTTP/1.0 clients. Upgrades (WebSocket) become a byte tunnel after the 101.
 *
 * One async loop per connection; per request it allocates the forwarded heads and, only while a
 * read has to wait, a promise. The request body is pumped concurrently with reading the response,
 * so an application may answer before it has read the whole body: that response is forwarded with
 * `connection: close` and the connection closes after it (Envoy's HTTP connection manager, "response
 * before request complete").
 *
 * Local replies, as Envoy's: malformed request 400, head too large 431, unsupported transfer coding
 * or CONNECT 501, other HTTP versions 505, an Expect other than 100-continue 417 (100-continue is
 * answered by the proxy and not forwarded, as Envoy does by default), upstream connection failure or
 * reset before the response 503, malformed upstream response 502. After a 4xx parse error the
 * connection closes.
 *
 * @module
 */
import { ChunkedDecoder } from "./chunked.ts";
import { RouteTimer } from "./route_timer.ts";
import { ascii } from "./chars.ts";
import {
  BODY_AS_IS,
  BODY_DECHUNK,
  BODY_NONE,
  BODY_RECHUNK,
  BODY_UNTIL_CLOSE,
  encodeFilterReply,
  encodeLocalReply,
  encodeRequestHead,
  encodeResponseHead,
  reasonPhrase,
} from "./encode.ts";
import { DEFAULT_HEAD_LIMITS, HeadParser } from "./head.ts";
import {
  EXPECT_CONTINUE,
  EXPECT_OTHER,
  HttpError,
  M_CONNECT,
  M_HEAD,
  REQUEST,
  RESPONSE,
} from "./http_head.ts";
import type { SocketIo } from "./socket_io.ts";
import type { FilterVerdict, SessionOptions } from "./session_types.ts";
import {
  B_CHUNKED,
  B_EMPTY,
  B_LENGTH,
  PUMP_BAD,
  PUMP_DOWN_FAILED,
  PUMP_NONE,
  PUMP_OK,
  PUMP_RUNNING,
  RequestBodyPump,
} from "./request_body.ts";
import { copyChunked, copyUntilClose, tunnel, writeHead, writeLengthResponse } from "./body_copy.ts";
import { grpcWebLocalReplyBytes, isGrpcWebContentType } from "../grpc/local_reply.ts";

const CONTINUE_100 = ascii("HTTP/1.1 100 Continue\r\n\r\n");
const RESET_BEFORE_HEADERS = "upstream connect error or disconnect/reset before headers. reset reason: ";

/** Forwards the requests of one downstream connection until it closes. */
export class Http1Session {
  /** When the session started waiting for a request head (ms since the epoch), 0 while busy. */
  waitingSince = 0;
  /** Request heads completed so far (a listener's request-headers timeout needs the first). */
  heads = 0;
  /**
   * When the request whose body is being received began (its head's first byte, ms since the epoch),
   * 0 once the body is complete or the response began: what a listener's request timeout runs on.
   */
  requestSince = 0;
  readonly #down: SocketIo;
  readonly #o: SessionOptions;
  readonly #req: HeadParser;
  readonly #res: HeadParser;
  readonly #resBody = new ChunkedDecoder(false, 502);
  #dechunk: ChunkedDecoder | null = null;
  /** Made on the first request whose route has a timeout (a gateway's). */
  #routeTimer: RouteTimer | null = null;
  /** The request body's copy to the upstream connection, concurrent with the response. */
  readonly #body: RequestBodyPump;
  /** The listener's request timeout cut the request ({@link abortRequest}): stop without a reply. */
  #aborted = false;

  constructor(down: SocketIo, options: SessionOptions) {
    this.#down = down;
    this.#o = options;
    this.#body = new RequestBodyPump(down, () => {
      this.requestSince = 0;
    });
    const limits = options.limits ?? DEFAULT_HEAD_LIMITS;
    this.#req = new HeadParser(REQUEST, limits);
    this.#res = new HeadParser(RESPONSE, limits);
  }

  /**
   * The parser of this session's request heads. A downstream view that reads heads itself (the
   * outbound listener's routing) parses them on it and hands them over ({@link HeadParser.handOver}).
   */
  get requestParser(): HeadParser {
    return this.#req;
  }

  /** Serves requests until the connection ends; never rejects. */
  async run(): Promise<void> {
    try {
      let more = true;
      while (more) {
        more = await this.#exchange();
        this.#routeTimer?.stop();
        // A request that ended with a local reply (or a close) is not the request timeout's any more.
        this.requestSince = 0;
      }
    } catch (e) {
      this.#o.log.debug("downstream connection ended with an error", {
        peer: this.#o.peer,
        error: String(e),
      });
      this.#down.destroy();
    }
  }

  /**
   * The listener's request timeout expired ({@link requestSince}): the upstream connection of the
   * request is reset, so the application stops waiting for the rest of the body, and the session
   * ends without a reply of its own (the listener answers 408 and closes the connection).
   */
  abortRequest(): void {
    this.#aborted = true;
    this.requestSince = 0;
    const up = this.#down.peer;
    this.#down.peer = null;
    up?.destroy();
  }

  /** One request and its response; true when the connection stays open for another. */
  async #exchange(): Promise<boolean> {
    const down = this.#down, o = this.#o, p = this.#req;
    p.reset();
    this.requestSince = 0;
    this.waitingSince = Date.now();
    down.dataAt = down.pending > 0 ? this.waitingSince : 0;
    let chunk: Uint8Array | null | undefined;
    let off = -1;
    for (;;) {
      chunk = down.read();
      if (chunk === undefined) {
        await down.wait();
        continue;
      }
      if (chunk === null) {
        // The client closed: between requests that is the normal end; inside a head, nothing to answer.
        down.lingerClose(null);
        return false;
      }
      try {
        off = p.feed(chunk);
      } catch (e) {
        if (!(e instanceof HttpError)) throw e;
        if (e.status === 505 && this.heads === 0 && o.http2Preface?.(down, chunk)) return false;
        this.#reject(e);
        return false;
      }
      if (off >= 0) break;
    }
    this.waitingSince = 0;
    this.heads++;
    if (off < chunk.length) down.unread(chunk.subarray(off));
    const h = p.head;
    if (h.method === M_CONNECT) {
      this.#reject(new HttpError(501, "CONNECT is not supported"));
      return false;
    }
    if (h.expect === EXPECT_OTHER) {
      this.#reject(new HttpError(417, "unsupported expectation"));
      return false;
    }
    o.observer.request();
    const bodyKind = h.chunked ? B_CHUNKED : h.contentLength > 0 ? B_LENGTH : B_EMPTY;
    if (bodyKind !== B_EMPTY) this.requestSince = down.dataAt || Date.now();
    const length = h.contentLength;
    const upgrade = h.upgrade && bodyKind === B_EMPTY;
    const clientMinor = h.minor;
    const isHead = h.method === M_HEAD;
    let keepDown = h.keepAlive;
    let verdict: FilterVerdict | null = null;
    if (o.filter) {
      const v = o.filter.check(h);
      verdict = v instanceof Promise ? await v : v;
      if (this.#aborted) return false;
      if (verdict !== null && verdict.reply !== null) {
        const grpcWeb = h.get("content-type");
        return this.#filtered(
          verdict,
          bodyKind,
          keepDown,
          isGrpcWebContentType(grpcWeb) ? grpcWeb : undefined,
        );
      }
    }
    const head = encodeRequestHead(h, {
      xfccElement: o.xfccElement,
      upgrade,
      defaultHost: o.defaultHost,
      extraFields: verdict?.addFields,
      target: verdict?.target,
      host: verdict?.host,
    });
    if (h.expect === EXPECT_CONTINUE && bodyKind !== B_EMPTY && clientMinor === 1) down.write(CONTINUE_100);

    for (let attempt = 0;; attempt++) {
      // A retry always gets a new connection.
      let up = attempt === 0 ? o.upstream.idle() : null;
      const reused = up !== null;
      if (up === null) {
        try {
          up = await o.upstream.connect();
        } catch (e) {
          o.observer.upstreamError("connect_failure");
          o.log.debug("upstream connect failed", { peer: o.peer, error: String(e) });
          return this.#failBeforeResponse(
            503,
            RESET_BEFORE_HEADERS + "connection failure",
            bodyKind,
            keepDown,
          );
        }
      }
      if (down.closed || this.#aborted) {
        // The client left (or the request timed out) while the connection was being made; nothing was sent on it.
        o.upstream.release(up, true);
        return false;
      }
      const inBefore = up.bytesIn;
      down.peer = up;
      this.#body.state = PUMP_NONE;
      this.#body.error = null;
      this.#body.cancel = false;
      let pumpDone: Promise<void> | null = null;
      try {
        if (bodyKind === B_EMPTY) writeHead(up, head);
        else {
          // The head and the body bytes already here in one write.
          this.#body.state = PUMP_RUNNING;
          pumpDone = this.#body.start(up, head, bodyKind, length);
        }
      } catch {
        // The pooled connection closed under us; treated as a reset below.
      }
      const routeMs = o.upstream.routeTimeoutMs;
      if (routeMs) {
        const sent = () => this.#body.state === PUMP_OK && down.peer === up;
        (this.#routeTimer ??= new RouteTimer()).startWhenSent(routeMs, up, pumpDone, sent);
      }

      // The response head, after any interim (1xx) responses.
      const r = this.#res;
      let failure = "";
      let c: Uint8Array | null | undefined = null;
      for (;;) {
        r.reset();
        let roff = -1;
        for (;;) {
          try {
            c = up.read();
          } catch {
            c = null;
          }
          if (c === undefined) {
            await up.wait();
            continue;
          }
          if (c === null) break;
          try {
            roff = r.feed(c);
          } catch (e) {
            failure = e instanceof HttpError ? e.message : String(e);
            break;
          }
          if (roff >= 0) break;
        }
        if (roff < 0) break;
        if (roff < c!.length) up.unread(c!.subarray(roff));
        const st = r.head.status;
        if (st >= 200 || st === 101) break;
        if (clientMinor === 1) {
          writeHead(
            down,
            encodeResponseHead(r.head, { body: BODY_NONE, keepAlive: true, clientMinor, upgrade: false }),
          );
        }
      }
      const rh = r.head;
      if (failure !== "" || c === null) {
        // No usable response head.
        down.peer = null;
        up.destroy();
        await this.#body.stop(pumpDone);
        if (this.#aborted) return false;
        if (this.#body.state === PUMP_BAD) {
          this.#reject(this.#body.error!);
          return false;
        }
        if (this.#body.state === PUMP_DOWN_FAILED) {
          down.destroy();
          return false;
        }
        if (this.#routeTimer?.expired) {
          o.observer.upstreamError("timeout");
          return this.#failBeforeResponse(504, "upstream request timeout", bodyKind, keepDown);
        }
        if (failure !== "") {
          o.observer.upstreamError("protocol_error");
          o.log.debug("malformed upstream response", { peer: o.peer, error: failure });
          return this.#failBeforeResponse(502, RESET_BEFORE_HEADERS + "protocol error", bodyKind, false);
        }
        if (reused && up.bytesIn === inBefore && bodyKind === B_EMPTY) {
          o.observer.retry();
          continue;
        }
        o.observer.upstreamError("reset_before_response");
        return this.#failBeforeResponse(
          503,
          RESET_BEFORE_HEADERS + "connection termination",
          bodyKind,
          keepDown,
        );
      }

      const st = rh.status;
      // The response begins: the request timeout stops, as Envoy's does.
      this.requestSince = 0;
      if (st === 101) {
        if (!upgrade) {
          down.peer = null;
          up.destroy();
          await this.#body.stop(pumpDone);
          o.observer.upstreamError("protocol_error");
          return this.#failBeforeResponse(502, RESET_BEFORE_HEADERS + "protocol error", bodyKind, false);
        }
        writeHead(
          down,
          encodeResponseHead(rh, { body: BODY_NONE, keepAlive: true, clientMinor, upgrade: true }),
        );
        o.observer.response(101, false);
        o.observer.upgrade();
        this.#routeTimer?.stop(); // Envoy: no route timeout for an upgraded (WebSocket) connection.
        await tunnel(down, up);
        return false;
      }

      if (this.#body.state === PUMP_BAD) {
        down.peer = null;
        up.destroy();
        this.#reject(this.#body.error!);
        return false;
      }
      // Response framing (RFC 9112 6.3) and how it is written downstream.
      let mode: number;
      let upReusable = rh.keepAlive;
      if (isHead || st === 204 || st === 304) mode = BODY_NONE;
      else if (rh.hasTransferEncoding) {
        if (rh.chunked) mode = clientMinor === 1 ? BODY_AS_IS : BODY_DECHUNK;
        else {
          mode = clientMinor === 1 ? BODY_RECHUNK : BODY_UNTIL_CLOSE;
          upReusable = false;
        }
      } else if (rh.contentLength >= 0) mode = rh.contentLength === 0 ? BODY_NONE : BODY_AS_IS;
      else {
        mode = clientMinor === 1 ? BODY_RECHUNK : BODY_UNTIL_CLOSE;
        upReusable = false;
      }
      if (mode === BODY_DECHUNK || mode === BODY_UNTIL_CLOSE) keepDown = false;
      // A response before the whole request body was forwarded (the application answered without
      // reading it, or the copy failed) says Connection: close and the connection closes after it, as
      // Envoy's connection manager does: the rest of the body cannot be skipped reliably, and a head
      // that promised keep-alive would let the next hop reuse a connection about to close (a 503 or
      // an EOF for its next request).
      if (bodyKind !== B_EMPTY && this.#body.state !== PUMP_OK) keepDown = false;
      // Head and the body bytes already here go out in one write: joined for a Content-Length body,
      // corked otherwise (the copy loops run synchronously up to their first wait).
      let body: Promise<boolean> | null = null;
      const headOptions = { body: mode, keepAlive: keepDown, clientMinor, upgrade: false };
      if (mode === BODY_NONE) writeHead(down, encodeResponseHead(rh, headOptions));
      else if (mode === BODY_AS_IS && !rh.hasTransferEncoding) {
        body = writeLengthResponse(up, down, rh, headOptions);
      } else {
        down.cork();
        try {
          writeHead(down, encodeResponseHead(rh, headOptions));
          if (mode === BODY_AS_IS) body = copyChunked(up, down, this.#resBody, false);
          else if (mode === BODY_DECHUNK) {
            body = copyChunked(up, down, this.#dechunk ??= new ChunkedDecoder(true, 502), true);
          } else body = copyUntilClose(up, down, mode === BODY_RECHUNK);
        } finally {
          down.uncork();
        }
      }
      o.observer.response(st, false);

      let complete = true;
      if (body !== null) {
        try {
          complete = await body;
        } catch (e) {
          if (!(e instanceof HttpError)) throw e;
          o.log.debug("malformed upstream response body", { peer: o.peer, error: e.message });
          complete = false;
        }
      }
      if (!complete) {
        o.observer.upstreamError(this.#routeTimer?.expired ? "timeout" : "reset_during_response");
        down.peer = null;
        up.destroy();
        await this.#body.stop(pumpDone);
        down.destroy();
        return false;
      }
      down.peer = null;
      if (pumpDone !== null) {
        if (this.#body.state === PUMP_RUNNING) {
          // The application answered before reading the whole body: neither side can be reused.
          up.destroy();
          await this.#body.stop(pumpDone);
        } else await pumpDone;
        if (this.#body.state !== PUMP_OK) {
          upReusable = false;
          keepDown = false;
        }
      }
      if (up.pending > 0) upReusable = false;
      this.#routeTimer?.stop();
      o.upstream.release(up, upReusable && !up.ended);
      if (!keepDown) {
        down.lingerClose(null);
        return false;
      }
      // A client that sends requests without reading the responses is held back here.
      if (down.needsDrain) await down.drain();
      return true;
    }
  }

  /**
   * A filter's reply instead of forwarding. The request body was not read, so the connection only
   * stays open when there is none.
   */
  async #filtered(v: FilterVerdict, bodyKind: number, keepDown: boolean, grpcWeb?: string): Promise<boolean> {
    const reply = v.reply!;
    this.#o.observer.response(reply.status, true);
    // A gRPC-Web request gets Envoy's gRPC local reply (grpc-status 7, 16...) instead of the HTTP one.
    const encode = (close: boolean) =>
      grpcWeb === undefined
        ? encodeFilterReply(reply, close)
        : grpcWebLocalReplyBytes(reply.status, reply.body, grpcWeb, close);
    if (!keepDown || bodyKind !== B_EMPTY) {
      this.#down.lingerClose(encode(true));
      return false;
    }
    if (!this.#down.write(encode(false))) await this.#down.drain();
    return true;
  }

  /** A local reply after which the connection closes (parse errors and the like). */
  #reject(e: HttpError): void {
    this.#o.log.debug("rejected request", { peer: this.#o.peer, status: e.status, reason: e.message });
    this.#o.observer.response(e.status, true);
    this.#down.lingerClose(encodeLocalReply(e.status, reasonPhrase(e.status), true));
  }

  /** A 5xx before any response byte; the connection stays open if the request was fully read. */
  async #failBeforeResponse(
    status: number,
    body: string,
    bodyKind: number,
    keepDown: boolean,
  ): Promise<boolean> {
    const keep = keepDown && (bodyKind === B_EMPTY || this.#body.state === PUMP_OK);
    this.#o.observer.response(status, true);
    const reply = encodeLocalReply(status, body, !keep);
    if (!keep) {
      this.#down.lingerClose(reply);
      return false;
    }
    if (!this.#down.write(reply)) await this.#down.drain();
    return true;
  }
}
