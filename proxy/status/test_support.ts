/**
 * Test helpers of the status listener: an application that records every request it gets, and a raw
 * HTTP/1.1 exchange (bytes out, the whole answer back).
 *
 * @module
 */

/** One request as the application saw it. */
export interface SeenRequest {
  method: string;
  /** Path and query, as received. */
  target: string;
  headers: Headers;
}

/** A Deno HTTP application on 127.0.0.1 that records requests; `/slow` answers after 300 ms. */
export class RecordingApp {
  readonly seen: SeenRequest[] = [];
  readonly server: Deno.HttpServer<Deno.NetAddr>;

  constructor() {
    this.server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const url = new URL(req.url);
      this.seen.push({ method: req.method, target: url.pathname + url.search, headers: req.headers });
      if (url.pathname === "/slow") await new Promise((r) => setTimeout(r, 300));
      return new Response("app\n", { status: url.pathname === "/fail" ? 503 : 200 });
    });
  }

  get port(): number {
    return this.server.addr.port;
  }

  close(): Promise<void> {
    return this.server.shutdown();
  }
}

/** Sends `request` (raw bytes) to 127.0.0.1:`port` and reads until the server closes. */
export async function rawExchange(port: number, request: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(request));
    const chunks: Uint8Array[] = [];
    const buf = new Uint8Array(16384);
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      chunks.push(buf.slice(0, n));
    }
    return new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => [...c])));
  } finally {
    conn.close();
  }
}

/** The status code of a raw answer. */
export function statusOf(answer: string): number {
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(answer);
  if (!m) throw new Error(`not an HTTP/1.1 answer: ${JSON.stringify(answer.slice(0, 80))}`);
  return Number(m[1]);
}
