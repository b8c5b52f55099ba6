/**
 * The status listener on `--statusPort` (Istio's pilot-agent status port 15020): where the injector
 * points the kubelet's rewritten probes. It serves only:
 *
 * - `GET /app-health/<container>/livez|readyz|startupz`: the original probe of that name from
 *   ISTIO_KUBE_APP_PROBERS, performed against 127.0.0.1 (./app_probe.ts); an unknown name is 404;
 * - `GET /healthz/ready`: 200 when the proxy is LIVE, else 503 (pilot-agent's readiness path).
 *
 * Not an open proxy: the request chooses a probe by the exact bytes of its path (no decoding, no dot
 * segment removal) and nothing else; its query, headers and body are never read or forwarded.
 * Concurrent requests for one probe share one check, so a flood of requests is not a flood of probes.
 *
 * The listener is its own small HTTP/1.1 server (one request per connection, `Connection: close`, as
 * the kubelet's prober sends) rather than Deno.serve, which has no request-head timeout: it is in the
 * proxy's process and reachable by anyone who reaches the pod, so it bounds what a client can hold
 * ({@link STATUS_LIMITS}). Other methods: 405; a malformed request line: 400.
 *
 * @module
 */
import { STATUS_CODES } from "node:http";
import type { AppProbers } from "../../shared/internal/app_probers.ts";
import type { ScopedLog } from "../logging/logger.ts";
import { type ProbeResult, runAppProbe } from "./app_probe.ts";

/** What the status handler needs. */
export interface StatusSource {
  probers: AppProbers;
  /** Whether the proxy serves (LIVE). */
  ready(): boolean;
  log?: ScopedLog;
}

/** An answer: status and a one-line body. */
export interface StatusAnswer {
  status: number;
  body: string;
}

/**
 * The status handler: one instance per listener (it holds the checks in flight).
 *
 * @returns a function of the request's method and raw request target
 */
export function statusHandler(
  source: StatusSource,
): (method: string, target: string) => Promise<StatusAnswer> {
  // A Map, so that no path reaches Object.prototype.
  const probers = new Map(Object.entries(source.probers));
  const inFlight = new Map<string, Promise<ProbeResult>>();
  return async (method, target) => {
    if (method !== "GET" && method !== "HEAD") return { status: 405, body: "method not allowed\n" };
    const q = target.indexOf("?");
    const path = q < 0 ? target : target.slice(0, q);
    if (path === "/healthz/ready") {
      return source.ready()
        ? { status: 200, body: "ready\n" }
        : { status: 503, body: "not ready: the proxy is not LIVE\n" };
    }
    const prober = probers.get(path);
    if (!prober) return { status: 404, body: "no such probe\n" };
    let check = inFlight.get(path);
    if (!check) {
      check = runAppProbe(prober).finally(() => inFlight.delete(path));
      inFlight.set(path, check);
    }
    const result = await check;
    if (result.status !== 200) source.log?.debug("app probe failed", { path, reason: result.reason });
    return { status: result.status, body: `${result.reason}\n` };
  };
}

/** What one client may hold. */
export interface StatusLimits {
  /** Time for the whole request head from the accept, ms; then the connection is closed. */
  headerTimeoutMs: number;
  /** Open connections; more are closed at accept. */
  maxConnections: number;
  /** Request head size; a larger one gets 431. */
  maxHeadBytes: number;
}

/** The defaults: the kubelet sends one small GET per connection. */
export const STATUS_LIMITS: Readonly<StatusLimits> = Object.freeze({
  headerTimeoutMs: 10_000,
  maxConnections: 64,
  maxHeadBytes: 8192,
});

/** A running status listener. */
export interface StatusServer {
  port: number;
  close(): Promise<void>;
}

const REQUEST_LINE = /^([A-Z]{1,16}) ([\x21-\x7e]{1,4096}) HTTP\/1\.[01]$/;

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
}

function answerBytes(a: StatusAnswer, headOnly: boolean): Uint8Array {
  const body = new TextEncoder().encode(a.body);
  const head = `HTTP/1.1 ${a.status} ${STATUS_CODES[a.status] ?? "Probe Failed"}\r\n` +
    `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
  const h = new TextEncoder().encode(head);
  if (headOnly) return h;
  const out = new Uint8Array(h.length + body.length);
  out.set(h);
  out.set(body, h.length);
  return out;
}

/** Reads the request head (up to the empty line); undefined when the client went away or timed out. */
async function readHead(conn: Deno.Conn, limits: StatusLimits): Promise<string | "too large" | undefined> {
  const buf = new Uint8Array(limits.maxHeadBytes);
  let len = 0;
  for (;;) {
    const n = await conn.read(buf.subarray(len));
    if (n === null) return undefined;
    len += n;
    // Latin-1: one character per byte, so offsets stay byte offsets.
    const text = new TextDecoder("latin1").decode(buf.subarray(0, len));
    const end = text.indexOf("\r\n\r\n");
    if (end >= 0) return text.slice(0, end);
    if (len === buf.length) return "too large";
  }
}

/** One accepted connection: closed once, by the timer, the end of the answer or the listener's close. */
class StatusConnection {
  private closed = false;
  constructor(private readonly conn: Deno.Conn) {}

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.conn.close();
  }

  async serve(
    handle: (method: string, target: string) => Promise<StatusAnswer>,
    limits: StatusLimits,
  ): Promise<void> {
    const timer = setTimeout(() => this.close(), limits.headerTimeoutMs);
    try {
      const head = await readHead(this.conn, limits).catch(() => undefined);
      clearTimeout(timer);
      if (head === undefined || this.closed) return;
      let answer: StatusAnswer;
      let method = "";
      if (head === "too large") answer = { status: 431, body: "request head too large\n" };
      else {
        const m = REQUEST_LINE.exec(head.slice(0, head.indexOf("\r\n") >>> 0));
        method = m?.[1] ?? "";
        answer = m ? await handle(m[1], m[2]) : { status: 400, body: "bad request line\n" };
      }
      if (!this.closed) await writeAll(this.conn, answerBytes(answer, method === "HEAD")).catch(() => {});
    } finally {
      clearTimeout(timer);
      this.close();
    }
  }
}

/**
 * Serves the status handler on `hostname`:`port` (0: any free port).
 *
 * @throws Deno.errors.AddrInUse and the like when it cannot listen
 */
export function startStatusServer(
  hostname: string,
  port: number,
  source: StatusSource,
  limits: StatusLimits = STATUS_LIMITS,
): StatusServer {
  const listener = Deno.listen({ hostname, port });
  const handle = statusHandler(source);
  const open = new Map<StatusConnection, Promise<void>>();
  const accepting = (async () => {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch {
        return; // closed
      }
      if (open.size >= limits.maxConnections) {
        conn.close();
        continue;
      }
      const c = new StatusConnection(conn);
      open.set(c, c.serve(handle, limits).finally(() => open.delete(c)));
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async close() {
      listener.close();
      await accepting;
      for (const c of open.keys()) c.close();
      await Promise.all(open.values());
    },
  };
}
