/**
 * `meshctl analyze [<file>...]` (meshctl seed, "analyze"): runs the analyzers over meshd's live
 * config (`--debug-address`), plus files that simulate extra config, or over files only with
 * `--use-orch=false`. Exit code 79 (istioctl's ExitAnalyzerFoundIssues) when a message reaches
 * `--failure-threshold`; 1 on an error such as meshd unreachable.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { parse as parseYaml } from "yaml";
import type { CliIo } from "../cli_io.ts";
import { parseBool } from "../../shared/internal/cli/pflag.ts";
import { addDebugFlags, meshdClient } from "../debug_flags.ts";
import { globalOptions } from "../global_options.ts";
import { collectArray } from "../../shared/internal/cli/pflag.ts";
import { type AnalysisMessage, ANALYZERS } from "./analyzers.ts";
import { type AnalysisInput, type AnalyzedResource, inputFromFiles, inputFromMeshd } from "./input.ts";
import { atLeast, type Level, parseLevel } from "./messages.ts";
import { applySuppressions, formatMessages, OUTPUT_FORMATS, parseSuppressions } from "./report.ts";
import { KUBE_ANALYZERS } from "./live/kube_analyzers.ts";
import { inputFromCluster } from "./live/cluster_input.ts";
import { commandOrchClient, orchFlags } from "../orch/orch_client.ts";

/** Every analyzer: the mesh config's, then the live cluster's (which say nothing without a cluster). */
const ALL_ANALYZERS = [...ANALYZERS, ...KUBE_ANALYZERS];

/** The program-wide flags the command reads. */
/** istioctl's exit code when analysis found issues at or above --failure-threshold. */
export const EXIT_ANALYZER_FOUND_ISSUES = 79;

/** Options of {@link runAnalysis}. */
export interface RunAnalysisOptions {
  /** Analyzer names to run; all when empty. */
  analyzers?: string[];
}

/**
 * Runs the analyzers over an input.
 *
 * @throws Error naming an unknown analyzer
 */
export function runAnalysis(input: AnalysisInput, options: RunAnalysisOptions = {}): AnalysisMessage[] {
  const wanted = options.analyzers ?? [];
  for (const name of wanted) {
    if (!ALL_ANALYZERS.some((a) => a.name === name)) {
      throw new Error(`--analyzer: unknown analyzer "${name}"; see meshctl analyze --list-analyzers`);
    }
  }
  const messages: AnalysisMessage[] = [];
  for (const a of ALL_ANALYZERS) {
    if (wanted.length === 0 || wanted.includes(a.name)) a.analyze(input, (m) => messages.push(m));
  }
  return messages;
}

/** Files simulate extra config over the live one: a file's resource replaces the live one of the same key. */
function overlay(live: AnalysisInput, files: AnalysisInput): AnalysisInput {
  const key = (r: AnalyzedResource) => `${r.kind}/${r.namespace}/${r.name}`;
  const fromFiles = new Set(files.resources.map(key));
  return {
    ...live,
    resources: [...live.resources.filter((r) => !fromFiles.has(key(r))), ...files.resources],
    namespaces: new Set([...live.namespaces, ...files.namespaces]),
    issues: files.issues,
    target: `${live.target} and ${files.target}`,
    files: files.files,
  };
}

async function rootNamespaceFrom(file: string | undefined, fallback: string): Promise<string> {
  if (!file) return fallback;
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    throw new Error(`--meshConfigFile: ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const mesh: unknown = parseYaml(text);
  const rootNamespace: unknown = typeof mesh === "object" && mesh !== null
    ? Reflect.get(mesh, "rootNamespace")
    : undefined;
  if (rootNamespace !== undefined && typeof rootNamespace !== "string") {
    throw new Error(`--meshConfigFile: ${file}: rootNamespace: must be a string`);
  }
  return rootNamespace ?? fallback;
}

function colourDefault(): boolean {
  return Deno.env.get("TERM") !== "dumb" && !Deno.env.get("NO_COLOR") && Deno.stdout.isTerminal();
}

/**
 * Whether the live config is the cluster's: an orchestrator config is named (`-c`, `--context`, env
 * KUBECONFIG) and meshd is not (`--debug-address`, env MESHCTL_DEBUG_ADDRESS, `--xds-address`, `--lab`).
 */
function readsCluster(command: CommandUnknownOpts, opts: Record<string, unknown>): boolean {
  const meshdNamed = opts.xdsAddress !== undefined ||
    command.getOptionValueSource("debugAddress") === "cli" ||
    !!Deno.env.get("MESHCTL_DEBUG_ADDRESS") || command.optsWithGlobals().lab !== undefined;
  const flags = orchFlags(command);
  const orchNamed = flags.orchconfig !== "" || flags.context !== "" || !!Deno.env.get("KUBECONFIG");
  return orchNamed && !meshdNamed;
}

async function fromCluster(command: CommandUnknownOpts, rootNamespace: string): Promise<AnalysisInput> {
  const cluster = commandOrchClient(command);
  try {
    return await inputFromCluster(cluster.api, rootNamespace, cluster.description);
  } finally {
    await cluster.close();
  }
}

/** Builds the `analyze` command. */
export function analyzeCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("analyze")
    .description(
      "Analyze mesh configuration and print validation messages: the cluster's (with -c, --context or KUBECONFIG: " +
        "mesh resources, namespaces, pods, services) or meshd's live config (--debug-address or --xds-address), plus " +
        "files simulating extra config; --use-orch=false analyzes files only",
    )
    .argument("[files...]", "files or directories (recursive); - for standard input")
    .option("-A, --all-namespaces", "analyze all namespaces (the default unless -n is given)")
    .option("--analyzer <name>", "run only this analyzer; repeatable", collectArray, new Array<string>())
    .option(
      "--color [bool]",
      "coloured output; default when stdout is a terminal and TERM is not dumb",
      parseBool,
    )
    .option(
      "--failure-threshold <level>",
      "severity at which the exit code becomes 79: Info, Warning, Error",
      "Error",
    )
    .option("--ignore-unknown", "ignore documents that cannot be parsed or are not mesh kinds")
    .option("-L, --list-analyzers", "list the analyzers and exit")
    .option("--meshConfigFile <file>", "mesh config YAML; its rootNamespace overrides meshd's or -i")
    .addOption(
      new Option("-o, --output <format>", "log, json or yaml").choices(OUTPUT_FORMATS).default(
        "log",
      ),
    )
    .option("--output-threshold <level>", "lowest severity shown: Info, Warning, Error", "Info")
    .option("-R, --recursive", "removed: directories are always walked")
    .option(
      "--remote-contexts <context>",
      "remote clusters (no effect: one meshd)",
      collectArray,
      new Array<string>(),
    )
    .option("-r, --revision <revision>", "revision analyzed (no effect: one meshd)", "default")
    .option(
      "-S, --suppress <code=resource>",
      "suppress a code on a resource, * wildcards; repeatable",
      collectArray,
      new Array<string>(),
    )
    .option(
      "-k, --use-orch [bool]",
      "analyze the live cluster or meshd's config; --use-orch=false analyzes files only",
      parseBool,
      true,
    )
    .option("-v, --verbose", "list the analyzers run");
  addDebugFlags(cmd);
  cmd.action(async (files, opts, command) => {
    const globals = globalOptions(command);
    if (opts.listAnalyzers) {
      io.stdout(
        "Available analyzers:\n" + ALL_ANALYZERS.map((a) => `\t* ${a.name}: ${a.description}\n`).join(""),
      );
      return;
    }
    const failure: Level = parseLevel("--failure-threshold", opts.failureThreshold);
    const threshold: Level = parseLevel("--output-threshold", opts.outputThreshold);
    const { suppressions, warnings } = parseSuppressions(opts.suppress);
    for (const w of warnings) io.stderr(w + "\n");
    if (!opts.useOrch && files.length === 0) {
      throw new Error(
        "--use-orch=false needs files to analyze: meshctl analyze --use-orch=false <file|dir>...",
      );
    }
    let rootNamespace = globals.meshNamespace;
    let input: AnalysisInput;
    if (opts.useOrch) {
      const live = readsCluster(command, opts)
        ? await fromCluster(command, globals.meshNamespace)
        : await inputFromMeshd(meshdClient(opts));
      rootNamespace = live.rootNamespace;
      input = live;
    }
    rootNamespace = await rootNamespaceFrom(opts.meshConfigFile, rootNamespace);
    if (files.length > 0) {
      const fromFiles = await inputFromFiles(files, {
        rootNamespace,
        defaultNamespace: globals.namespace || undefined,
      });
      input = opts.useOrch ? overlay(input!, fromFiles) : fromFiles;
    }
    input = { ...input!, rootNamespace };
    if (opts.ignoreUnknown) input.issues = input.issues.filter((i) => i.resource !== undefined);
    if (opts.verbose) {
      const run = ALL_ANALYZERS.filter((a) => opts.analyzer.length === 0 || opts.analyzer.includes(a.name));
      io.stderr(
        `Analyzed resources in ${input.target}\nExecuted analyzers:\n${
          run.map((a) => `\t ${a.name}\n`).join("")
        }\n`,
      );
    }
    let messages = applySuppressions(
      runAnalysis(input, { analyzers: opts.analyzer }),
      suppressions,
      input.resources,
    );
    if (globals.namespace && !opts.allNamespaces) {
      const ns = globals.namespace;
      messages = messages.filter((m) =>
        !m.resource || m.resource.namespace === ns ||
        (m.resource.kind === "Namespace" && m.resource.name === ns)
      );
    }
    const shown = messages.filter((m) => atLeast(m.type.level, threshold));
    const colour = opts.color ?? colourDefault();
    io.stdout(formatMessages(shown, opts.output, colour));
    if (shown.length === 0) {
      const what = input.files.length > 1 ? `:\n  - ${input.files.join("\n  - ")}\n` : ` ${input.target}.\n`;
      io.stderr(`\u2714 No validation issues found when analyzing${what}`);
    }
    if (messages.some((m) => atLeast(m.type.level, failure))) io.setExitCode(EXIT_ANALYZER_FOUND_ISSUES);
  });
  return cmd;
}
