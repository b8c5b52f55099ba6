/**
 * The proxy pair bench's two loads and their output parsers: wrk (keep-alive GET, maximum throughput)
 * and hey (1 KiB POST at about 1,000 req/s, percentiles). Loopback only, each bounded by `seconds`.
 *
 * @module
 */
import { msOf, round, run } from "../pair_support.ts";

/** wrk's figures: req/s, requests completed, p50/p99 ms, socket errors plus non-2xx/3xx answers. */
export interface Wrk {
  rps: number;
  /** Requests completed during the load ("N requests in ..."). */
  requests: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
}

/** Parses `wrk --latency` output. */
export function parseWrk(out: string): Wrk {
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)$`, "m").exec(out);
    return m ? round(msOf(m[1], m[2]), 3) : NaN;
  };
  const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  return {
    rps: round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]), 0),
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN),
    p50_ms: pct("50"),
    p99_ms: pct("99"),
    errors: (errs ? errs.slice(1).reduce((a, b) => a + Number(b), 0) : 0) + (non2xx ? Number(non2xx[1]) : 0),
  };
}

/** `wrk -c50 -t2 -d<seconds>s --latency` against `url` with Host `host`. */
export async function wrk(url: string, host: string, seconds: number): Promise<Wrk> {
  return parseWrk(
    await run("wrk", [
      "-c50",
      "-t2",
      `-d${seconds}s`,
      "--timeout",
      "5s",
      "--latency",
      "-H",
      `Host: ${host}`,
      url,
    ]),
  );
}

/** hey's figures: req/s, p50/p90/p99 ms, 200 answers, other answers, errors. */
export interface Hey {
  rps: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  ok: number;
  non200: number;
  errors: number;
}

/** Parses hey's summary output. */
export function parseHey(out: string): Hey {
  const pct = (p: string) =>
    round(Number(new RegExp(`${p}%{1,2} in ([\\d.]+) secs`).exec(out)![1]) * 1000, 3);
  const codes = [...out.matchAll(/\[(\d+)\]\s+(\d+) responses/g)];
  const ok = codes.filter((c) => c[1] === "200").reduce((a, c) => a + Number(c[2]), 0);
  const all = codes.reduce((a, c) => a + Number(c[2]), 0);
  const errSection = out.split("Error distribution:")[1] ?? "";
  const errors = [...errSection.matchAll(/\[(\d+)\]/g)].reduce((a, m) => a + Number(m[1]), 0);
  return {
    rps: round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]), 0),
    p50_ms: pct("50"),
    p90_ms: pct("90"),
    p99_ms: pct("99"),
    ok,
    non200: all - ok,
    errors,
  };
}

/** `hey -z <seconds>s -c 16 -q 63 -m POST -D <body file>` (about 1,000 req/s) against `url`, Host `host`. */
export async function hey(url: string, host: string, seconds: number, body: string): Promise<Hey> {
  return parseHey(
    await run("hey", [
      "-z",
      `${seconds}s`,
      "-c",
      "16",
      "-q",
      "63",
      "-t",
      "5",
      "-m",
      "POST",
      "-D",
      body,
      "-host",
      host,
      url,
    ]),
  );
}
