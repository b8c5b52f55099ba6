/**
 * `meshctl experimental authz` (meshctl seed, "authz"): `check` lists the AuthorizationPolicies that
 * apply to a workload, merged (mesh-, namespace- and workload-level); `explain` decides one request
 * against them with the shared evaluator and says which policy and rule decided. Both read policy
 * files (`-f`, offline) or meshd's config in force (`--debug-address`, or over xDS with `--xds-address`).
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import {
  applicableAuthorizationPolicies,
  compileAuthorization,
  type MergedAuthorizationPolicies,
  PATH_NORMALIZATIONS,
} from "../../shared/mod.ts";
import { type AnalysisInput, inputFromFiles, inputFromMeshd } from "../analyze/input.ts";
import type { CliIo } from "../cli_io.ts";
import { addDebugFlags, meshdClient } from "../debug_flags.ts";
import { type GlobalOptions, globalOptions } from "../global_options.ts";
import { type JsonObject, oneOf, stringsFlag } from "../json_fields.ts";
import { collectArray } from "../../shared/internal/cli/pflag.ts";
import { structured } from "../output.ts";
import { parseTarget } from "../proxy_target.ts";
import { type DumpJwtRule, jwtRulesText, policiesFromDump, readConfigDumpFile } from "./config_dump.ts";
import { checkText, checkValue, explainText, type Explanation, ruleSummary } from "./format.ts";
import {
  defaultNormalization,
  normalizationFromDump,
  normalizationFromMeshd,
  type NormalizationInForce,
  normalizationText,
  normalizeWith,
} from "./path_normalization.ts";
import { requestFlagsOf, requestFromFlags } from "./request.ts";
import { type AuthzWorkload, resolveWorkload } from "./workload.ts";

/** Exit code of `explain` when the request is denied (0: allowed; 1: error; 2: usage). */
export const EXIT_DENIED = 3;

const OUTPUTS = ["short", "json", "yaml"] as const;

/** The flags that name the input and the output; `all` is every option, for the debug flags. */
interface SourceFlags {
  file: string[];
  labels: string[];
  output: typeof OUTPUTS[number];
  all: JsonObject;
}

function sourceFlagsOf(opts: JsonObject): SourceFlags {
  return {
    file: stringsFlag(opts, "file"),
    labels: stringsFlag(opts, "labels"),
    output: oneOf(OUTPUTS, opts.output, "--output"),
    all: opts,
  };
}

async function loadInput(opts: SourceFlags, globals: GlobalOptions): Promise<AnalysisInput> {
  if (opts.file.length === 0) return await inputFromMeshd(meshdClient(opts.all));
  const input = await inputFromFiles(opts.file, {
    rootNamespace: globals.meshNamespace,
    defaultNamespace: globals.namespace || undefined,
  });
  const errors = input.issues.filter((i) => i.severity === "error");
  if (errors.length > 0) {
    throw new Error(
      "invalid input:\n" +
        errors.map((i) =>
          `  ${i.file}${i.line ? `:${i.line}` : ""}: ${i.resource ?? ""}${
            i.field ? ` ${i.field}` : ""
          }: ${i.message}`
        ).join("\n"),
    );
  }
  return input;
}

/** What applies to the workload; `jwtRules` only when read from a proxy's config dump. */
interface Applicable {
  workload: AuthzWorkload;
  merged: MergedAuthorizationPolicies;
  jwtRules?: DumpJwtRule[];
  /** The path normalization the evaluated proxy applies. */
  normalization: NormalizationInForce;
}

/** `--port` when it is a number (explain; `requestFromFlags` reports a bad one). */
function portOf(opts: JsonObject): number | undefined {
  return typeof opts.port === "string" && /^\d+$/.test(opts.port) ? Number(opts.port) : undefined;
}

/** A single `-f` that is a proxy's config dump: the policies that proxy enforces. */
async function fromConfigDump(
  target: string | undefined,
  opts: SourceFlags,
  globals: GlobalOptions,
): Promise<Applicable | undefined> {
  if (opts.file.length !== 1) return undefined;
  const dump = await readConfigDumpFile(opts.file[0]);
  if (dump === undefined) return undefined;
  const found = policiesFromDump(dump, opts.file[0]);
  if (target !== undefined) {
    const t = parseTarget(target, globals.namespace || "default");
    if (t.name !== found.workload.name || t.namespace !== found.workload.namespace) {
      throw new Error(
        `${opts.file[0]}: the config dump is of proxy ${found.workload.name}.${found.workload.namespace}, ` +
          `not ${t.name}.${t.namespace}; leave out the target to check the dump's proxy`,
      );
    }
  }
  return { ...found, normalization: normalizationFromDump(dump, portOf(opts.all), opts.file[0]) };
}

async function applicable(
  target: string | undefined,
  opts: SourceFlags,
  globals: GlobalOptions,
): Promise<Applicable> {
  const dumped = await fromConfigDump(target, opts, globals);
  if (dumped) return dumped;
  const input = await loadInput(opts, globals);
  const workload = resolveWorkload(input, { target, labels: opts.labels, namespace: globals.namespace });
  const policies = input.resources.flatMap((r) =>
    r.resource.kind === "AuthorizationPolicy"
      ? [{ ...r.resource, metadata: { ...r.resource.metadata, namespace: r.namespace } }]
      : []
  );
  return {
    workload,
    merged: applicableAuthorizationPolicies(policies, workload, { rootNamespace: input.rootNamespace }),
    normalization: opts.file.length > 0
      ? defaultNormalization("policy files carry no mesh config")
      : normalizationFromMeshd(input.pathNormalization, input.target),
  };
}

/** What a subcommand computed: its short form and its structured value. */
interface Report {
  text: string;
  value: unknown;
}

/** Adds the flags that name the input and the workload, and the action that prints the report. */
function withSource(
  cmd: Command<[string | undefined], Record<string, unknown>>,
  io: CliIo,
  report: (a: Applicable & { flags: JsonObject }) => Promise<Report>,
): CommandUnknownOpts {
  cmd.option(
    "-f, --file <file>",
    "policy YAML files or directories, offline (repeatable), or one proxy's saved /config_dump JSON " +
      "(the policies it enforces); default: meshd's live config",
    collectArray,
    new Array<string>(),
  )
    .option(
      "-l, --labels <k=v,...>",
      "the workload's labels, in namespace -n (repeatable), instead of a target",
      collectArray,
      new Array<string>(),
    )
    .addOption(
      new Option("-o, --output <format>", "short, json or yaml").choices(OUTPUTS).default(
        "short",
      ),
    );
  addDebugFlags(cmd).action(async (target, opts, command) => {
    const source = sourceFlagsOf(opts);
    const found = await applicable(target, source, globalOptions(command));
    const chosen = opts.pathNormalization === undefined
      ? undefined
      : oneOf(PATH_NORMALIZATIONS, opts.pathNormalization, "--path-normalization");
    const r = await report({
      ...found,
      ...(chosen ? { normalization: { option: chosen, from: "--path-normalization" } } : {}),
      flags: opts,
    });
    io.stdout(source.output === "short" ? r.text : structured(r.value, source.output));
  });
  return cmd;
}

function checkCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("check")
    .description(
      "List the AuthorizationPolicies that apply to a workload, merged (action, scope, policy, rules): " +
        "from -f policy files (offline), a proxy's config dump (-f, with its JWT rules) or meshd's live config",
    )
    .argument("[target]", "[<type>/]<name>[.<namespace>]: a WorkloadEntry or registered workload");
  return withSource(
    cmd,
    io,
    ({ workload, merged, jwtRules, normalization }) =>
      Promise.resolve({
        text: checkText(workload, merged) + (jwtRules ? jwtRulesText(jwtRules) : "") +
          normalizationText(normalization),
        value: {
          ...checkValue(workload, merged),
          ...(jwtRules ? { jwtRules } : {}),
          pathNormalization: normalization,
        },
      }),
  );
}

function explainCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("explain")
    .description(
      `Decide one request to a workload with the shared authorization evaluator and say which policy and rule ` +
        `decided; exit 0 when allowed, ${EXIT_DENIED} when denied`,
    )
    .argument("[target]", "[<type>/]<name>[.<namespace>]: a WorkloadEntry or registered workload")
    .option("--method <method>", "HTTP method", "GET")
    .option(
      "--path <path>",
      "request path (query allowed), normalized with the option the proxy applies (see --path-normalization)",
      "/",
    )
    .addOption(
      new Option(
        "--path-normalization <option>",
        "meshConfig.pathNormalization to normalize --path with, instead of the one in force (from the config " +
          "dump's listener or meshd; policy files: DECODE_AND_MERGE_SLASHES)",
      ).choices(PATH_NORMALIZATIONS),
    )
    .option("--host <host>", "Host header")
    .option("--port <port>", "destination (container) port", "80")
    .option("-H, --header <name=value>", "request header (repeatable)", collectArray, new Array<string>())
    .option("--source-principal <id>", "peer SPIFFE ID from mutual TLS, e.g. cluster.local/ns/foo/sa/sleep")
    .option("--source-namespace <ns>", "peer namespace (principal built with --source-service-account)")
    .option("--source-service-account <sa>", "peer service account (default: default)")
    .option(
      "--trust-domain <domain>",
      "trust domain of a principal built from namespace and service account",
      "cluster.local",
    )
    .option("--source-ip <ip>", "peer address")
    .option("--remote-ip <ip>", "original client address (default: --source-ip)")
    .option("--destination-ip <ip>", "address the connection was accepted on")
    .option("--sni <name>", "TLS server name")
    .option("--request-principal <iss/sub>", "request principal of a verified JWT")
    .option(
      "--jwt <file|json>",
      "claims JSON object, or a file holding one or a JWT (decoded, not verified)",
    );
  return withSource(cmd, io, async ({ workload, merged, flags, normalization }) => {
    const { request, jwtNote } = await requestFromFlags(requestFlagsOf(flags));
    const path = normalizeWith(request.path, normalization);
    const decision = compileAuthorization(merged.all).evaluate({
      ...request,
      path: path.path,
      pathNormalized: true,
    });
    const decider = merged.all.find((p) =>
      p.namespace === decision.policy?.namespace && p.name === decision.policy?.name
    );
    const rule = decision.ruleIndex === undefined ? undefined : decider?.rules?.[decision.ruleIndex];
    const e: Explanation = {
      workload,
      request,
      decision,
      ...(rule ? { rule: ruleSummary(rule) } : {}),
      policies: merged.all.map((p) => `${p.name}.${p.namespace}`),
      ...(jwtNote ? { jwtNote } : {}),
      pathNormalization: path,
    };
    if (!decision.allowed) io.setExitCode(EXIT_DENIED);
    return { text: explainText(e), value: e };
  });
}

/** Builds the `authz` group: `check` and `explain`. */
export function authzCommand(io: CliIo): CommandUnknownOpts {
  return new Command("authz").description(
    "Inspect authorization: the policies of a workload, and their decision on a request",
  )
    .addCommand(checkCommand(io))
    .addCommand(explainCommand(io));
}
