/**
 * Where the summary's figures come from: runs of the benches as child processes (their one JSON line on
 * stdout, progress passed through on stderr) or JSON saved from earlier runs.
 *
 * @module
 */
import { checkoutCommit, log, pathExists, runProvenance } from "../pair_support.ts";
import type { AuthzFigure, MeshdScaleJson, ProxyPairJson } from "./goals.ts";

const root = new URL("../../../", import.meta.url).pathname;

/** The `deno bench` filter of the authorization goal: every indexed case at 1,000 policies. */
export const AUTHZ_FILTER = "/1000 policies.*indexed/";

/** The last line of `text` that parses as a JSON object. @throws Error naming `what` when there is none */
export function lastJsonLine<T>(text: string, what: string): T {
  for (const line of text.trim().split("\n").reverse()) {
    if (!line.trim().startsWith("{")) continue;
    try {
      return JSON.parse(line) as T;
    } catch {
      // A progress line that happens to start with a brace: keep looking.
    }
  }
  throw new Error(`${what}: no JSON line in its output`);
}

/** Every line of `text` that parses as a JSON object (meshd_scale runs saved one per line). */
export function jsonLines<T>(text: string): T[] {
  return text.split("\n").filter((l) => l.trim().startsWith("{")).flatMap((l) => {
    try {
      return [JSON.parse(l) as T];
    } catch {
      return [];
    }
  });
}

/**
 * The slowest indexed 1,000-policy case of `deno bench --json` output (`benches[].results[].ok.avg`,
 * ns). null when no such case ran.
 */
export function parseAuthzBench(json: string): Pick<AuthzFigure, "worstNs" | "worstCase"> | null {
  const report = JSON.parse(json) as {
    benches: { name: string; results: { ok?: { avg: number } }[] }[];
  };
  const cases = report.benches
    .filter((b) => /1000 policies.*indexed/.test(b.name))
    .flatMap((b) => b.results.flatMap((r) => r.ok ? [{ name: b.name, avg: r.ok.avg }] : []));
  if (cases.length === 0) return null;
  const worst = cases.reduce((a, b) => (b.avg > a.avg ? b : a));
  return { worstNs: worst.avg, worstCase: worst.name };
}

/**
 * The slowest 1,000-policy request of tests/bench/authz_cpu.ts output (lines
 * `<mix>, 1000 policies, <request>: <best> ns (median <median> ns) CPU per request`): its median CPU
 * nanoseconds, which hold on a shared machine where wall-clock averages move 2-10x. null when no
 * such line is there.
 */
export function parseAuthzCpu(text: string): Pick<AuthzFigure, "worstNs" | "worstCase"> | null {
  const cases = [...text.matchAll(/^(.*1000 policies, [^:]*): \d+ ns \(median (\d+) ns\) CPU per request$/gm)]
    .map((m) => ({ name: m[1], ns: Number(m[2]) }));
  if (cases.length === 0) return null;
  const worst = cases.reduce((a, b) => (b.ns > a.ns ? b : a));
  return { worstNs: worst.ns, worstCase: `${worst.name} (CPU, median of 5 rounds)` };
}

/** Runs `deno <args>` in `cwd` (default: this checkout) with `env` added; stdout returned, stderr shown. */
async function deno(args: string[], env: Record<string, string> = {}, cwd = root): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`deno ${args.join(" ")} exited with ${out.code}`);
  return new TextDecoder().decode(out.stdout);
}

/**
 * tests/bench/proxy_pair at `concurrency` for `seconds` per load; `targets` sets BENCH_TARGETS, `proxyRoot`
 * BENCH_PROXY_ROOT (the checkout whose proxy runs: a "before" run).
 */
export async function runProxyPair(
  concurrency: number,
  seconds: number,
  targets?: string,
  proxyRoot?: string,
): Promise<ProxyPairJson> {
  const env = {
    ...(targets ? { BENCH_TARGETS: targets } : {}),
    ...(proxyRoot ? { BENCH_PROXY_ROOT: proxyRoot } : {}),
  };
  log(`summary: proxy_pair --concurrency ${concurrency} ${JSON.stringify(env)}`);
  const out = await deno(
    ["run", "-A", "tests/bench/proxy_pair/main.ts", String(concurrency), String(seconds)],
    env,
  );
  return lastJsonLine<ProxyPairJson>(out, "proxy_pair");
}

/**
 * `checkout`'s authorization figure: tests/bench/authz_cpu.ts (CPU time, {@link parseAuthzCpu}), or in
 * a checkout that predates it, authz_bench.ts's indexed 1,000-policy cases (`deno bench --json`,
 * wall-clock averages).
 */
export async function runAuthz(checkout = root): Promise<AuthzFigure> {
  const where = checkout === root ? "" : `(in ${checkout}) `;
  let figure: Pick<AuthzFigure, "worstNs" | "worstCase"> | null;
  let args: string[];
  if (await pathExists(`${checkout}/tests/bench/authz_cpu.ts`)) {
    log(`summary: authz_cpu (1,000 policies, CPU time) in ${checkout}`);
    args = ["run", "-A", "tests/bench/authz_cpu.ts"];
    figure = parseAuthzCpu(await deno(args, {}, checkout));
  } else {
    log(`summary: authz_bench (1,000 policies, indexed) in ${checkout}`);
    args = ["bench", "--allow-all", "--json", "--filter", AUTHZ_FILTER, "tests/bench/authz_bench.ts"];
    figure = parseAuthzBench(await deno(args, {}, checkout));
  }
  if (!figure) throw new Error(`${args.at(-1)}: no 1,000-policy case ran`);
  return {
    ...figure,
    commit: await checkoutCommit(checkout),
    command: `${where}./dev deno ${args.join(" ").replace(AUTHZ_FILTER, `"${AUTHZ_FILTER}"`)}`,
  };
}

/** tests/bench/meshd_scale with `clients` simulated proxies and 1,000 services. */
export async function runMeshdScale(clients: number): Promise<MeshdScaleJson> {
  log(`summary: meshd_scale ${clients} clients (long)`);
  const args = ["tests/bench/meshd_scale/main.ts", String(clients), "1000"];
  const j = lastJsonLine<MeshdScaleJson>(await deno(["run", "-A", ...args]), "meshd_scale");
  const provenance = await runProvenance(args);
  return { ...provenance, ...j, command: provenance.command };
}
