/**
 * `./dev bench`: issue 17's goals, each printed as met or missed (issue 17 item 5). Runs, one after the
 * other on this machine:
 *
 * - tests/bench/proxy_pair at `--concurrency 1` (every target: direct, the mesh pair, the HAProxy pair,
 *   the node:tls and Deno-TLS floors), then at `--concurrency 2` and `3` (the mesh pair only, for the
 *   memory per extra worker: at 1 the data path may run inline on the main isolate, so 2 → 3 is the step
 *   that adds exactly one Worker; `--no-workers` skips them);
 * - tests/bench/authz_bench.ts's indexed cases at 1,000 policies (`deno bench --json`; `--no-authz`
 *   skips it);
 * - tests/bench/meshd_scale at 10,000 and 25,000 proxies only with `--meshd` (25,000 takes many
 *   minutes); `--meshd-json <file>` reads lines saved from earlier runs instead.
 *
 * `--base <checkout>` runs each of these on that checkout just before ours (BENCH_PROXY_ROOT for the
 * proxy pair, the base's own authz_bench.ts) and adds a "before" column: before and after from one run.
 *
 * `--pair-json`, `--workers-json` and `--authz-json` read saved output instead of running. Prints one
 * Markdown table on stdout (goal, target, measured, ratio, met/missed, the commit and command of each
 * figure), then the proxy pair's headline with its floors; progress on stderr. `--out <file>` saves the
 * inputs and the rows as JSON. Exit status 0 whether goals are met or not (a benchmark, not a test).
 *
 * Run: ./dev bench [--seconds 10] [--no-workers] [--no-authz] [--meshd] ...
 *
 * @module
 */
import { Command } from "@commander-js/extra-typings";
import { resolve } from "node:path";
import { runProvenance } from "../pair_support.ts";
import { headlineText } from "../proxy_pair/summary.ts";
import {
  type AuthzFigure,
  evaluateGoals,
  type GoalInputs,
  goalsTable,
  type MeshdScaleJson,
} from "./goals.ts";
import { jsonLines, lastJsonLine, parseAuthzBench, runAuthz, runMeshdScale, runProxyPair } from "./inputs.ts";

const program = new Command()
  .name("./dev bench")
  .description("Issue 17's goals, met or missed, from the benches run here (or their saved JSON).")
  .option("--seconds <n>", "seconds per proxy_pair load", "10")
  .option("--no-workers", "skip proxy_pair at --concurrency 2 and 3 (memory per extra worker: not run)")
  .option("--no-authz", "skip the authorization bench")
  .option("--meshd", "run meshd_scale at 10,000 and 25,000 proxies (long)", false)
  .option("--meshd-clients <n...>", "with --meshd: the proxy counts to run (goals exist for 10000 and 25000)")
  .option("--meshd-json <files...>", "meshd_scale JSON lines saved from earlier runs")
  .option("--pair-json <file>", "proxy_pair JSON (--concurrency 1) saved from an earlier run")
  .option("--workers-json <files...>", "proxy_pair JSON of the mesh at two concurrencies, saved earlier")
  .option("--authz-json <file>", "`deno bench --json` output of tests/bench/authz_bench.ts")
  .option("--base <checkout>", "also run each bench on this checkout first (before, after, interleaved)")
  .option("--out <file>", "also write the inputs and the rows as JSON to this file");
program.parse(["deno", "bench", ...Deno.args]);
const opts = program.opts();
const seconds = Number(opts.seconds);

const read = (file: string) => Deno.readTextFileSync(file);
const base = opts.base ? resolve(opts.base) : undefined;
const inputs: GoalInputs = {};
/** The base checkout's figures (--base): the same benches, each run just before ours. */
const before: GoalInputs | undefined = base ? {} : undefined;
/** `run` for the base checkout (with --base), then for this one. */
async function both<T>(run: (checkout?: string) => Promise<T>): Promise<[T | undefined, T]> {
  const b = base ? await run(base) : undefined;
  return [b, await run()];
}

if (opts.pairJson) inputs.pair1 = lastJsonLine(read(opts.pairJson), opts.pairJson);
else {
  const [b, ours] = await both((c) => runProxyPair(1, seconds, undefined, c));
  inputs.pair1 = ours;
  if (before) before.pair1 = b;
}
if (opts.workersJson) inputs.workers = opts.workersJson.map((f) => lastJsonLine(read(f), f));
else if (opts.workers) {
  const [b2, c2] = await both((c) => runProxyPair(2, seconds, "mesh", c));
  const [b3, c3] = await both((c) => runProxyPair(3, seconds, "mesh", c));
  inputs.workers = [c2, c3];
  if (before && b2 && b3) before.workers = [b2, b3];
}
if (opts.authzJson) {
  const figure = parseAuthzBench(read(opts.authzJson));
  inputs.authz = figure
    ? { ...figure, command: `deno bench --json output in ${opts.authzJson}` } as AuthzFigure
    : undefined;
} else if (opts.authz) {
  const [b, ours] = await both((c) => runAuthz(c));
  inputs.authz = ours;
  if (before) before.authz = b;
}
const meshd: MeshdScaleJson[] = (opts.meshdJson ?? []).flatMap((f) =>
  jsonLines<MeshdScaleJson>(read(f)).map((j) => ({ command: `not recorded (saved in ${f})`, ...j }))
);
const sizes = opts.meshdClients?.map(Number) ?? [10_000, 25_000];
for (const n of opts.meshd ? sizes : []) meshd.push(await runMeshdScale(n));
inputs.meshd = meshd;

const rows = evaluateGoals(inputs);
const me = await runProvenance([]);
const command = ["./dev bench", ...Deno.args].join(" ");
console.log(`Issue 17 goals: \`${command}\` at ${me.commit}, ${new Date().toISOString()}\n`);
const beforeRows = before ? evaluateGoals(before) : undefined;
console.log(goalsTable(rows, beforeRows));
for (const [label, p] of [["before: ", before?.pair1], ["", inputs.pair1]] as const) {
  if (!p) continue;
  const results = {
    direct: p.direct,
    mesh: p.mesh,
    haproxy: p.haproxy,
    node_tls: p.node_tls,
    deno_tls: p.deno_tls,
  };
  const proxy = p.proxy_commit ? `, proxy of ${p.proxy_commit}` : "";
  console.log(`\n${label}${headlineText(results, `${p.commit}${proxy}: ${p.command}`)}`);
}
if (opts.out) {
  const saved = { commit: me.commit, inputs, rows, ...(before ? { before, beforeRows } : {}) };
  await Deno.writeTextFile(opts.out, JSON.stringify(saved, null, 1));
}
Deno.exit(0);
