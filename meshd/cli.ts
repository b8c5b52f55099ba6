/**
 * The meshd program (meshd seed, "Command tree"): `discovery`, `request`, `version` and
 * `completion`, each accepting the root's `--vklog`. Built as a function so that tests and the
 * entry point run the same tree.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, InvalidArgumentError, Option } from "@commander-js/extra-typings";
import { stringify } from "yaml";
import { completionCommand } from "../shared/internal/cli/completion_command.ts";
import { buildInfo, parseDuration } from "../shared/mod.ts";
import { BootstrapTokenIssuer, parseTokenAudiences } from "./ca/mod.ts";
import { runDiscovery } from "./discovery.ts";
import { Logger } from "./logging/mod.ts";
import {
  addDiscoveryFlags,
  checkVklog,
  flagOption,
  readDiscoveryFlags,
  validateDiscoveryFlags,
} from "./options/discovery_flags.ts";
import { DISCOVERY_FLAGS } from "./options/discovery_flag_table.ts";
import { ENV_VARS, readEnvironment } from "./options/environment.ts";
import { DEFAULT_REGISTRY, type EnvVar } from "./options/env/env_var.ts";
import { parseGoBool, parseListenAddress, showValue } from "../shared/internal/cli/go_values.ts";

/** Where a run's output goes, and the environment it reads. */
export interface MeshdIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** The environment variables (Deno.env.toObject() in the real program). */
  env: Readonly<Record<string, string | undefined>>;
}

/** How long `meshd request` waits for an answer, as Istio's request command does. */
const REQUEST_TIMEOUT_MS = 60_000;

/** A failure caused by the user's input: its message is printed after `error: `, with exit code 1. */
class UserError extends Error {}

function goBool(text: string): boolean {
  const r = parseGoBool(text);
  if (!r.ok) throw new InvalidArgumentError(`${showValue(text)} ${r.reason}`);
  return r.value;
}

/** The one line `meshd discovery` prints when it has nowhere to read config from. */
const NO_CONFIG_SOURCE =
  "meshd discovery needs a config source: pass --configDir <directory of config YAML files>, or " +
  "--kubeconfig <file> (in a pod: the in-cluster config) with --registries including Orchestrator";

/** --configDir, or Kubernetes (the Orchestrator registry) through --kubeconfig or the in-cluster config. */
function hasConfigSource(
  options: { configDir: string; kubeconfig: string; registries: readonly string[] },
  env: Readonly<Record<string, string | undefined>>,
): boolean {
  if (options.configDir !== "") return true;
  return options.registries.includes(DEFAULT_REGISTRY) &&
    (options.kubeconfig !== "" || (env.KUBERNETES_SERVICE_HOST ?? "") !== "");
}

/** `meshd discovery --help`'s list of the environment variables, those without effect marked. */
function environmentHelp(): string {
  const live = ENV_VARS.filter((v: EnvVar) => v.noEffect === undefined).map((v) => v.name);
  const inert = ENV_VARS.filter((v: EnvVar) => v.noEffect !== undefined).map((v) => v.name);
  const wrap = (names: string[]): string => {
    const lines: string[] = [];
    for (const name of names) {
      if (lines.length > 0 && lines[lines.length - 1].length + name.length < 98) {
        lines[lines.length - 1] += `, ${name}`;
      } else lines.push(name);
    }
    return lines.map((l, i) => `  ${l}${i < lines.length - 1 ? "," : ""}\n`).join("");
  };
  return `\nEnvironment variables in effect:\n${wrap(live)}` +
    `\nEnvironment variables accepted and validated, with no effect yet (each warns when set):\n` +
    wrap(inert);
}

function discoveryCommand(io: MeshdIo, setExitCode: (code: number) => void): CommandUnknownOpts {
  const command: CommandUnknownOpts = new Command("discovery")
    .description(
      "Start the proxy discovery service: config from --configDir or the Kubernetes API (--kubeconfig or " +
        "in-cluster), ADS, the CA, metrics and debug. PARTIAL: from Kubernetes only the mesh's CRDs and " +
        "gateway Secrets are read (no Services, EndpointSlices or Pods yet), no status is written, and " +
        "there are no webhooks yet",
    );
  command.addHelpText("after", environmentHelp);
  return addDiscoveryFlags(command).action(async () => {
    const environment = readEnvironment(io.env);
    const flags = validateDiscoveryFlags(readDiscoveryFlags(command), { environment: environment.env });
    for (const w of [...flags.warnings, ...environment.warnings]) io.stderr(`warning: ${w}\n`);
    const errors = [...flags.errors, ...environment.errors];
    if (errors.length === 0 && !hasConfigSource(flags.options, io.env)) errors.push(NO_CONFIG_SOURCE);
    for (const e of errors) io.stderr(`error: ${e}\n`);
    if (errors.length > 0) {
      setExitCode(1);
      return;
    }
    let logger: Logger;
    try {
      logger = new Logger(flags.options.log, io);
    } catch (e) {
      throw new UserError((e as Error).message);
    }
    try {
      await runDiscovery(flags.options, environment.env, logger);
    } finally {
      logger.close();
    }
  });
}

function defaultOf(name: string): string {
  return String(DISCOVERY_FLAGS.find((f) => f.name === name)?.default);
}

const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Sends one request and prints the answer; the status line goes to stderr so stdout is only the body. */
async function request(
  args: { method: string; path: string; body: string | undefined },
  options: { httpAddr: string; monitoringAddr: string; io: MeshdIo },
): Promise<number> {
  const { method, path, body } = args;
  if (!HTTP_TOKEN.test(method)) throw new UserError(`${showValue(method)} is not an HTTP method`);
  if (!path.startsWith("/")) throw new UserError(`path ${showValue(path)} must begin with /`);
  if (body !== undefined && /^(GET|HEAD)$/i.test(method)) {
    throw new UserError(`a ${method} request cannot carry a body`);
  }
  // Debug handlers are on the discovery HTTP server, metrics on the monitoring one.
  const flag = path.startsWith("/debug") ? "httpAddr" : "monitoringAddr";
  const addr = parseListenAddress(options[flag]);
  if (!addr.ok) throw new UserError(`--${flag}: ${showValue(options[flag])} ${addr.reason}`);
  const host = addr.value.host === "" ? "127.0.0.1" : addr.value.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${addr.value.port}${path}`;
  let response: Response;
  try {
    response = await fetch(url, { method, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) {
      throw new UserError(`meshd request needs network access: run it with --allow-net=${host}`);
    }
    if (e instanceof DOMException && e.name === "TimeoutError") {
      throw new UserError(`${method} ${url}: no answer within ${REQUEST_TIMEOUT_MS / 1000}s`);
    }
    throw new UserError(`${method} ${url}: ${(e as Error).message}; is meshd discovery running?`);
  }
  const text = await response.text();
  options.io.stdout(text.length === 0 || text.endsWith("\n") ? text : `${text}\n`);
  const status = `HTTP ${response.status} ${response.statusText}`.trimEnd();
  if (response.ok) {
    options.io.stderr(`${status}\n`);
    return 0;
  }
  options.io.stderr(`error: ${method} ${url}: ${status}\n`);
  return 1;
}

function requestCommand(io: MeshdIo, setExitCode: (code: number) => void): CommandUnknownOpts {
  return new Command("request")
    .description(
      "Make an HTTP request to meshd's metrics/debug endpoint: /debug paths go to --httpAddr, others " +
        "to --monitoringAddr; the host is 127.0.0.1 unless the address names one",
    )
    .argument("<method>", "HTTP method, e.g. GET")
    .argument("<path>", "path and query, e.g. /debug/syncz or /metrics")
    .argument("[body]", "request body")
    .option("--httpAddr <address>", "meshd's discovery HTTP address, for /debug paths", defaultOf("httpAddr"))
    .option(
      "--monitoringAddr <address>",
      "meshd's monitoring address, for other paths",
      defaultOf("monitoringAddr"),
    )
    .action(async (method, path, body, opts) => {
      setExitCode(await request({ method, path, body }, { ...opts, io }));
    });
}

/**
 * `meshd token`: mints a bootstrap token for a workload without a running meshd. The authority is
 * read access to ROOT_CA_DIR's token key (meshd/ca/README.md, "Bootstrap tokens"); the key is never
 * created here, so a token cannot come from a key meshd does not use.
 */
function tokenCommand(io: MeshdIo, setExitCode: (code: number) => void): CommandUnknownOpts {
  return new Command("token")
    .description("Print a bootstrap token for a workload's first CSR (needs read access to ROOT_CA_DIR)")
    .requiredOption("-n, --namespace <namespace>", "the workload's namespace")
    .option("--serviceAccount <name>", "the workload's service account", "default")
    .option("--duration <duration>", "lifetime, Go syntax (at most 24h)", "1h")
    .option("-o, --output <format>", "token (just the token) or json", "token")
    .action(async (opts) => {
      const environment = readEnvironment(io.env);
      if (environment.errors.length > 0) {
        for (const e of environment.errors) io.stderr(`error: ${e}\n`);
        return setExitCode(1);
      }
      const ns = parseDuration(opts.duration);
      if (ns === undefined || ns % 1_000_000_000n !== 0n) {
        throw new UserError(
          `--duration: ${opts.duration} is not a whole number of seconds in Go syntax, e.g. 1h`,
        );
      }
      if (opts.output !== "token" && opts.output !== "json") {
        throw new UserError(`--output: use token or json`);
      }
      const env = environment.env;
      let issuer: BootstrapTokenIssuer;
      try {
        issuer = await BootstrapTokenIssuer.open(env.ROOT_CA_DIR, {
          audiences: parseTokenAudiences(env.TOKEN_AUDIENCES),
          issuer: env.TOKEN_ISSUER,
          create: false,
        });
      } catch (e) {
        throw new UserError(`ROOT_CA_DIR ${env.ROOT_CA_DIR}: ${(e as Error).message}`);
      }
      try {
        const token = await issuer.issue({
          namespace: opts.namespace,
          serviceAccount: opts.serviceAccount,
          durationSeconds: Number(ns / 1_000_000_000n),
        });
        io.stdout(opts.output === "json" ? JSON.stringify(token, null, 2) + "\n" : token.token + "\n");
      } catch (e) {
        throw new UserError((e as Error).message);
      }
    });
}

function versionCommand(io: MeshdIo): CommandUnknownOpts {
  return new Command("version")
    .description("Print build information")
    .addOption(new Option("-o, --output <format>", "yaml or json").choices(["yaml", "json"] as const))
    .addOption(
      new Option("-s, --short [bool]", "print only the version; --short=false for full information")
        .argParser(goBool)
        .default(true),
    )
    .action((opts) => {
      const info = buildInfo();
      if (opts.output === "json") io.stdout(JSON.stringify({ clientVersion: info }, null, 2) + "\n");
      else if (opts.output === "yaml") io.stdout(stringify({ clientVersion: info }));
      else if (opts.short) io.stdout(`${info.version}\n`);
      else io.stdout(Object.entries(info).map(([k, v]) => `${k}: ${v}`).join("\n") + "\n");
    });
}

function configureAll(command: CommandUnknownOpts, io: MeshdIo): void {
  // showGlobalOptions: each command's help lists --vklog, as cobra's "Global Flags" does.
  command.configureOutput({ writeOut: io.stdout, writeErr: io.stderr }).exitOverride()
    .configureHelp({ showGlobalOptions: true });
  for (const c of command.commands) configureAll(c, io);
}

/** Builds the whole meshd command tree; `setExitCode` receives the code of a failed action. */
export function buildProgram(io: MeshdIo, setExitCode: (code: number) => void): CommandUnknownOpts {
  const vklog = DISCOVERY_FLAGS.find((f) => f.name === "vklog")!;
  const program: CommandUnknownOpts = new Command("meshd")
    .description(
      "The mesh control plane (in the manner of istiod). PARTIAL: from Kubernetes it reads config " +
        "(CRDs, gateway Secrets) but no service registry yet, and there are no injection or validation " +
        "webhooks yet",
    )
    .addOption(flagOption(vklog))
    .showHelpAfterError();
  program.hook("preAction", (_program, action) => {
    const given = program.opts().vklog as string | undefined;
    const error = checkVklog(given);
    if (error) throw new UserError(error);
    // discovery warns of every flag without effect itself, --vklog included.
    if (given !== undefined && action.name() !== "discovery") {
      io.stderr(`warning: --vklog has no effect yet: ${vklog.reason}\n`);
    }
  });
  program.addCommand(discoveryCommand(io, setExitCode));
  program.addCommand(requestCommand(io, setExitCode));
  program.addCommand(tokenCommand(io, setExitCode));
  program.addCommand(versionCommand(io));
  program.addCommand(completionCommand(() => program, io.stdout));
  configureAll(program, io);
  return program;
}

/**
 * Runs meshd with the given arguments (without the program name).
 *
 * @returns the exit code: 0 on success, 1 on a bad value or a failed request, 2 on bad usage
 *   (an unknown command or flag)
 */
export async function runMeshd(args: string[], io: MeshdIo): Promise<number> {
  let code = 0;
  const program = buildProgram(io, (c) => (code = c));
  try {
    await program.parseAsync(args, { from: "user" });
  } catch (e) {
    if (e instanceof UserError) {
      io.stderr(`error: ${e.message}\n`);
      return 1;
    }
    const err = e as { code?: unknown; exitCode?: number };
    // Not only commander's errors carry a code: the Kubernetes client's ApiError has a numeric one.
    if (typeof err.code !== "string" || !err.code.startsWith("commander.")) throw e;
    // Commander has printed its message. Help asked for, or shown for a command group, is not a failure.
    if (err.exitCode === 0 || err.code === "commander.help") return 0;
    return err.code === "commander.invalidArgument" ? 1 : 2;
  }
  return code;
}
