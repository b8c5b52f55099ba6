/**
 * Sends raw bytes, one connection per case, and records what came back: the program the hostile
 * corpus runs inside a lab workload's network namespace (`lab exec`), so that its hosts file and
 * iptables capture apply exactly as to that workload's own traffic.
 *
 * Usage: `deno run --allow-net --allow-read raw_client.ts <requests.json>`; prints a JSON array of
 * {@link RawResult} on stdout, in the order of the input.
 *
 * Each connection is bounded: it ends when the peer closes, when nothing arrives for `idleMs`, or
 * at `totalMs`, whichever comes first; at most `concurrency` run at once.
 *
 * @module
 */
import { Buffer } from "node:buffer";

const encodeBase64 = (b: Uint8Array): string => Buffer.from(b).toString("base64");
const decodeBase64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "base64"));

/** One connection to make. */
export interface RawRequest {
  id: string;
  /** Address to dial (an IP or a name from the workload's hosts file). */
  host: string;
  port: number;
  /** The bytes to send, base64. */
  data: string;
}

/** The input file. */
export interface RawBatch {
  requests: RawRequest[];
  concurrency: number;
  /** Ms of silence after which the answer is taken as complete. */
  idleMs: number;
  /** Ms a connection may last at most. */
  totalMs: number;
  /** Bytes of response kept per connection. */
  keep: number;
}

/** What one connection gave. */
export interface RawResult {
  id: string;
  /** The first `keep` bytes received, base64. */
  response: string;
  /** `closed` (peer's FIN), `reset`, `idle`, `timeout`, or `connect: <error>`. */
  end: string;
  /** Whether writing the request failed part-way (the peer closed while we were still sending). */
  writeFailed: boolean;
  ms: number;
}

async function exchange(r: RawRequest, b: RawBatch): Promise<RawResult> {
  const start = Date.now();
  const result = (response: Uint8Array, end: string, writeFailed = false): RawResult => ({
    id: r.id,
    response: encodeBase64(response),
    end,
    writeFailed,
    ms: Date.now() - start,
  });
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname: r.host, port: r.port });
  } catch (e) {
    return result(new Uint8Array(), `connect: ${(e as Error).message}`);
  }
  let writeFailed = false;
  const writing = (async () => {
    const data = decodeBase64(r.data);
    try {
      for (let off = 0; off < data.length;) off += await conn.write(data.subarray(off));
    } catch {
      writeFailed = true;
    }
  })();
  const got = new Uint8Array(b.keep);
  let n = 0;
  let end = "timeout";
  const buf = new Uint8Array(65536);
  for (;;) {
    const left = b.totalMs - (Date.now() - start);
    if (left <= 0) break;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const quiet = new Promise<"idle" | "timeout">((res) => {
      timer = setTimeout(() => res(b.idleMs < left ? "idle" : "timeout"), Math.min(b.idleMs, left));
    });
    let read: number | null | "idle" | "timeout";
    try {
      read = await Promise.race([conn.read(buf), quiet]);
    } catch (e) {
      read = null;
      end = e instanceof Deno.errors.ConnectionReset ? "reset" : `error: ${(e as Error).message}`;
    } finally {
      clearTimeout(timer);
    }
    if (read === null) {
      if (end === "timeout") end = "closed";
      break;
    }
    if (read === "idle" || read === "timeout") {
      end = read;
      break;
    }
    const take = Math.min(read, b.keep - n);
    got.set(buf.subarray(0, take), n);
    n += take;
  }
  try {
    conn.close();
  } catch {
    // already closed by a failed read
  }
  await writing;
  return result(got.subarray(0, n), end, writeFailed);
}

/** Runs every request of `b`, `b.concurrency` at a time; results in input order. */
export async function runBatch(b: RawBatch): Promise<RawResult[]> {
  const out: RawResult[] = new Array(b.requests.length);
  let next = 0;
  const worker = async () => {
    while (next < b.requests.length) {
      const i = next++;
      out[i] = await exchange(b.requests[i], b);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, b.concurrency) }, worker));
  return out;
}

if (import.meta.main) {
  const batch = JSON.parse(await Deno.readTextFile(Deno.args[0])) as RawBatch;
  console.log(JSON.stringify(await runBatch(batch)));
}
