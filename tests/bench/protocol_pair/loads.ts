/**
 * The three loads of the protocol benchmark, each bounded in time, and what they report:
 * iperf3 (TCP throughput), h2load (HTTP/2 requests per second) and grpc_bench.py (gRPC unary calls at
 * a fixed rate, latency percentiles).
 *
 * @module
 */
import { msOf, round, run } from "../pair_support.ts";

const here = new URL(".", import.meta.url).pathname;

/** One iperf3 run: receiver's throughput and the sender's retransmits. */
export interface Iperf {
  gbit_s: number;
  bytes: number;
  retransmits: number;
}

/** `iperf3 -c <host> -p <port> -t <seconds> -J` (one stream, client sends). */
export async function iperf3(host: string, port: number, seconds: number): Promise<Iperf> {
  const r = await new Deno.Command("iperf3", {
    args: ["-c", host, "-p", String(port), "-t", String(seconds), "-J"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(r.stdout);
  const out = text.startsWith("{") ? JSON.parse(text) : { error: new TextDecoder().decode(r.stderr) || text };
  if (out.error) throw new Error(`iperf3 to ${host}:${port}: ${out.error}`);
  const received = out.end.sum_received;
  return {
    gbit_s: round(received.bits_per_second / 1e9, 3),
    bytes: received.bytes,
    retransmits: out.end.sum_sent.retransmits ?? 0,
  };
}

/** One h2load run. */
export interface H2load {
  rps: number;
  succeeded: number;
  failed: number;
  errored: number;
  non2xx: number;
  mean_ms: number;
}

/**
 * `h2load -D <seconds> -c <clients> -m <streams> -t 1` (h2c prior knowledge) on `url` with
 * `:authority` `authority`.
 */
export async function h2load(
  url: string,
  authority: string,
  seconds: number,
  clients = 16,
  streams = 10,
): Promise<H2load> {
  const out = await run("h2load", [
    "-D",
    String(seconds),
    "-c",
    String(clients),
    "-m",
    String(streams),
    "-t",
    "1",
    "-H",
    `:authority: ${authority}`,
    url,
  ]);
  const finished = /finished in [\d.]+s, ([\d.]+) req\/s/.exec(out);
  const req = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(
    out,
  );
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  const mean = /time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)/.exec(out);
  if (!finished || !req || !codes) throw new Error(`h2load output not understood:\n${out}`);
  return {
    rps: round(Number(finished[1]), 0),
    succeeded: Number(req[1]),
    failed: Number(req[2]),
    errored: Number(req[3]),
    non2xx: Number(codes[2]) + Number(codes[3]) + Number(codes[4]),
    mean_ms: mean ? round(msOf(mean[1], mean[2]), 3) : NaN,
  };
}

/** One fixed-rate gRPC run (grpc_bench.py load). */
export interface GrpcLoad {
  sent: number;
  ok: number;
  errors: Record<string, number>;
  rate: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number | null;
  send_lag_p99_ms: number;
}

/** The grpc_bench.py command line for `args` (Debian's python3, which has python3-grpcio). */
export function grpcBench(args: string[]): [string, string[]] {
  return ["/usr/bin/python3", [`${here}grpc_bench.py`, ...args]];
}

/**
 * Unary calls of `size` bytes to `<host>:<port>` with `:authority` `authority`, one every
 * 1/`rate` s for `seconds` (open loop), latency from each call's scheduled time.
 */
export async function grpcLoad(
  host: string,
  port: number,
  authority: string,
  rate: number,
  seconds: number,
  size = 100,
): Promise<GrpcLoad> {
  const [cmd, args] = grpcBench([
    "load",
    `${host}:${port}`,
    authority,
    String(rate),
    String(seconds),
    String(size),
  ]);
  return JSON.parse(await run(cmd, args));
}
