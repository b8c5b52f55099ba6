/**
 * The mutation check: plants each bug of the mutant tables, one at a time, in a temporary copy of
 * `shared/`, runs the unit test files that cover the mutated logic with `deno test`, and reports
 * whether they caught it. The working tree is never modified.
 *
 * Usage: `deno run --allow-all tests/mutation/run.ts [--area <area>]... [--only <text>] [--jobs <n>]`
 * (or `./dev mutation`). Exits 1 when a mutant survives, is stale (its text is no longer in the
 * file) or breaks the module instead of the tests (a test run that fails without a failed test),
 * and when the tests fail with no mutant planted.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { AUTHORIZATION_MUTANTS } from "./mutants_authorization.ts";
import { AUTHORIZATION_INDEX_MUTANTS } from "./mutants_authorization_index.ts";
import { JWT_MUTANTS } from "./mutants_jwt.ts";
import { MATCHER_MUTANTS } from "./mutants_matchers.ts";
import { PEER_AUTHENTICATION_MUTANTS } from "./mutants_peer_authentication.ts";
import { TCP_AUTHORIZATION_MUTANTS } from "./mutants_tcp_authorization.ts";
import type { Mutant } from "./mutant.ts";

/** Every mutant, by area. */
export const MUTANTS: readonly Mutant[] = [
  ...AUTHORIZATION_MUTANTS,
  ...AUTHORIZATION_INDEX_MUTANTS,
  ...TCP_AUTHORIZATION_MUTANTS,
  ...MATCHER_MUTANTS,
  ...JWT_MUTANTS,
  ...PEER_AUTHENTICATION_MUTANTS,
];

/** The result of one mutant. */
export interface MutantResult {
  mutant: Mutant;
  /**
   * `caught`: at least one test failed; `survived`: every test passed; `stale`: an edit's text is
   * not exactly once in the file; `broken`: the run failed without a failed test (a mutant that
   * does not load proves nothing about the tests).
   */
  outcome: "caught" | "survived" | "stale" | "broken";
  /** For `caught`, the first failing test; otherwise why. */
  detail: string;
  /** Wall-clock seconds of the test run. */
  seconds: number;
}

/** What {@link runMutants} found. */
export interface MutationReport {
  results: MutantResult[];
  /** The table, one line per mutant, and a summary line. */
  text: string;
  /** True when every mutant was caught. */
  ok: boolean;
  /** Wall-clock seconds of the whole check, the copy and the baseline runs included. */
  seconds: number;
}

const ROOT = new URL("../../", import.meta.url);
const decoder = new TextDecoder();

async function copyTree(from: URL, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    const target = `${to}/${e.name}`;
    if (e.isDirectory) await copyTree(new URL(`${e.name}/`, from), target);
    else if (e.isFile) await Deno.copyFile(new URL(e.name, from), target);
  }
}

async function denoTest(cwd: string, files: readonly string[]): Promise<{ ok: boolean; output: string }> {
  // --no-check: a planted bug is judged by the tests, not by the type checker.
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["test", "--no-check", "--fail-fast", "--allow-all", "--quiet", ...files],
    cwd,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { ok: r.success, output: decoder.decode(r.stdout) + decoder.decode(r.stderr) };
}

/** The first failing test's name, or undefined when the output names none. */
function firstFailure(output: string): string | undefined {
  const failed = /(\d+) failed/.exec(output);
  if (!failed || Number(failed[1]) === 0) return undefined;
  return /^(.+?) \.\.\. FAILED/m.exec(output)?.[1]?.trim() ?? "a test failed";
}

function occurrences(text: string, find: string): number {
  let n = 0;
  for (let i = text.indexOf(find); i >= 0; i = text.indexOf(find, i + 1)) n++;
  return n;
}

async function runOne(copy: string, mutant: Mutant): Promise<MutantResult> {
  const path = `${copy}/${mutant.file}`;
  const original = await Deno.readTextFile(path);
  let text = original;
  for (const { find, replace } of mutant.edits) {
    const n = occurrences(text, find);
    if (n !== 1) {
      return { mutant, outcome: "stale", detail: `${JSON.stringify(find)} occurs ${n} times`, seconds: 0 };
    }
    text = text.replace(find, () => replace);
  }
  const start = performance.now();
  await Deno.writeTextFile(path, text);
  try {
    // One file at a time, cheapest first: the first that fails decides, so most mutants cost one run.
    for (const file of mutant.tests) {
      const r = await denoTest(copy, [file]);
      if (r.ok) continue;
      const seconds = (performance.now() - start) / 1000;
      const failure = firstFailure(r.output);
      if (failure === undefined) {
        const detail = r.output.trim().split("\n").slice(0, 3).join(" | ");
        return { mutant, outcome: "broken", detail, seconds };
      }
      return {
        mutant,
        outcome: "caught",
        detail: `${failure} (${file.slice(file.lastIndexOf("/") + 1)})`,
        seconds,
      };
    }
    return {
      mutant,
      outcome: "survived",
      detail: "every test passed",
      seconds: (performance.now() - start) / 1000,
    };
  } finally {
    await Deno.writeTextFile(path, original);
  }
}

function table(results: readonly MutantResult[], seconds: number): string {
  const lines = results.map((r) =>
    `${r.outcome === "caught" ? "caught  " : r.outcome.toUpperCase().padEnd(8)} ${
      r.mutant.area.padEnd(19)
    } ` +
    `${r.mutant.name.padEnd(56)} ${r.seconds.toFixed(1).padStart(5)} s  ${r.detail}`
  );
  const caught = results.filter((r) => r.outcome === "caught").length;
  lines.push(`${caught}/${results.length} mutants caught in ${seconds.toFixed(1)} s`);
  return lines.join("\n");
}

/**
 * Where Deno keeps transpiled modules, by path. The copies' paths are new on every run, so each run
 * would leave its transpiled copies (about 0.6 MB each) there for good unless removed.
 */
async function emitCacheDir(): Promise<string | undefined> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  })
    .output();
  if (!r.success) return undefined;
  return (JSON.parse(decoder.decode(r.stdout)) as { typescriptCache?: string }).typescriptCache;
}

async function removeCopy(copy: string, emitCache: string | undefined): Promise<void> {
  await Deno.remove(copy, { recursive: true });
  if (emitCache !== undefined) {
    await Deno.remove(`${emitCache}/file${copy}`, { recursive: true }).catch(() => {});
  }
}

async function prepareCopy(): Promise<string> {
  const copy = await Deno.makeTempDir({ prefix: "mesh-mutation-" });
  await copyTree(new URL("shared/", ROOT), `${copy}/shared`);
  for (const f of ["deno.json", "deno.lock"]) await Deno.copyFile(new URL(f, ROOT), `${copy}/${f}`);
  return copy;
}

/** Options of {@link runMutants}. */
export interface RunOptions {
  /** Mutants tested at once, each in its own copy of `shared/`; default 2 (the CI machine's cores). */
  jobs?: number;
  /** Called after each mutant, e.g. to print progress. */
  onResult?: (r: MutantResult) => void;
}

/**
 * Runs the check on fresh temporary copies of `shared/` (and the root deno.json and deno.lock),
 * removed afterwards.
 *
 * @param mutants the mutants to plant, one at a time per copy; default {@link MUTANTS}
 * @param options parallel copies and a progress callback
 * @returns the results, in the order of `mutants`, and their table
 * @throws {Error} when the test files fail with no mutant planted (the check would mean nothing)
 */
export async function runMutants(
  mutants: readonly Mutant[] = MUTANTS,
  options: RunOptions = {},
): Promise<MutationReport> {
  const start = performance.now();
  const jobs = Math.max(1, Math.min(options.jobs ?? 2, mutants.length));
  const copies: string[] = [];
  try {
    for (let i = 0; i < jobs; i++) copies.push(await prepareCopy());
    const files = [...new Set(mutants.flatMap((m) => m.tests))];
    const baseline = await denoTest(copies[0], files);
    if (!baseline.ok) throw new Error(`the tests fail with no mutant planted:\n${baseline.output}`);
    const results: MutantResult[] = new Array(mutants.length);
    let next = 0;
    await Promise.all(copies.map(async (copy) => {
      for (let i = next++; i < mutants.length; i = next++) {
        results[i] = await runOne(copy, mutants[i]);
        options.onResult?.(results[i]);
      }
    }));
    const seconds = (performance.now() - start) / 1000;
    return {
      results,
      text: table(results, seconds),
      ok: results.every((r) => r.outcome === "caught"),
      seconds,
    };
  } finally {
    const emitCache = await emitCacheDir();
    for (const copy of copies) await removeCopy(copy, emitCache);
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      area: { type: "string", multiple: true },
      only: { type: "string" },
      jobs: { type: "string", default: "2" },
    },
  });
  const selected = MUTANTS.filter((m) =>
    (values.area === undefined || values.area.includes(m.area)) &&
    (values.only === undefined || m.name.includes(values.only))
  );
  const jobs = Number(values.jobs);
  if (selected.length === 0 || !Number.isInteger(jobs) || jobs < 1) {
    console.error(
      selected.length === 0
        ? `no mutant matches; areas: ${[...new Set(MUTANTS.map((m) => m.area))].join(", ")}`
        : `--jobs must be a positive integer, got ${values.jobs}`,
    );
    Deno.exit(2);
  }
  const report = await runMutants(selected, {
    jobs,
    onResult: (r) => console.error(`${r.outcome} ${r.mutant.area}: ${r.mutant.name}`),
  });
  console.log(report.text);
  Deno.exit(report.ok ? 0 : 1);
}
