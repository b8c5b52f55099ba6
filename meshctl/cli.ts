/**
 * The meshctl program: its command tree and the common flags of the meshctl seed ("Common flags").
 * Built as a function so that tests run the same tree in-process.
 *
 * @module
 */
import { metricsCommand } from "./metrics/metrics.ts";
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import { analyzeCommand } from "./analyze/command.ts";
import { authzCommand } from "./authz/command.ts";
import { adminCommand } from "./admin/command.ts";
import { completionCommand } from "../shared/internal/cli/completion_command.ts";
import { internalDebugCommand } from "./internal_debug/command.ts";
import { inertFlagWarnings } from "./inert_flags.ts";
import { addLabMode, closeLabMode } from "./lab_connector.ts";
import { optionsCommand } from "./options_command.ts";
import { workloadCommand } from "./workload/command.ts";
import { experimentalCommand } from "./experimental/command.ts";
import { diagnoseCommands, diagnoseExperimentalCommands } from "./diagnose/command.ts";
import { DEFAULT_MESH_NAMESPACE } from "./global_options.ts";
import { proxyConfigCommand } from "./proxy_config/command.ts";
import { proxyStatsCommand } from "./proxy_stats/command.ts";
import { proxyStatusCommand } from "./proxy_status/command.ts";
import { validateCommand } from "./commands/validate.ts";
import { versionCommand } from "./commands/version.ts";
import { collectArray } from "../shared/internal/cli/pflag.ts";
import { checkCommand, notYetCommand } from "./command_check.ts";
import { addOrchXdsMode, closeOrchXdsMode } from "./orch/xds_mode.ts";
import { addOrchMeshdForward } from "./orch/meshd_forward.ts";
import { COMPLETE_COMMAND, runComplete } from "./orch/complete.ts";
import { installCommands } from "./install/command.ts";
import { orchInjectCommand } from "./install/orch_inject.ts";
import { tagCommand } from "./install/tag.ts";

import type { CliIo } from "./cli_io.ts";

const AMBIENT =
  "needs ambient mode, node proxies and waypoints, which the mesh does not have (out of scope for now)";

/** Builds the whole meshctl command tree. */
export function buildProgram(io: CliIo): CommandUnknownOpts {
  const program: CommandUnknownOpts = new Command("meshctl")
    .description("Operate and debug the mesh (in the manner of istioctl)")
    .option("--as <user>", "user to impersonate for the orchestrator operation (Impersonate-User)")
    .option(
      "--as-group <group>",
      "group to impersonate, repeatable; needs --as (Impersonate-Group)",
      collectArray,
      [] as string[],
    )
    .option("--as-uid <uid>", "UID to impersonate; needs --as (Impersonate-Uid)")
    .option("--context <name>", "orchestrator configuration context (default: the file's current-context)")
    .option(
      "-i, --meshNamespace <namespace>",
      "mesh system namespace, also the root namespace",
      DEFAULT_MESH_NAMESPACE,
    )
    .option(
      "-c, --orchconfig <file>",
      "orchestrator configuration file (kubeconfig; default: KUBECONFIG, else ~/.kube/config)",
    )
    .option(
      "-n, --namespace <namespace>",
      "namespace for resources that name none (default: the context's namespace, else default)",
      "",
    )
    .option(
      "--vklog <level>",
      "log verbosity, like -v (no effect yet: meshctl writes no leveled logs)",
      "0",
    )
    .showHelpAfterError()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  program.hook("preAction", (_root, action) => {
    for (const w of inertFlagWarnings(action)) io.stderr(`warning: ${w}\n`);
  });
  addLabMode(program);
  addOrchXdsMode(program);
  addOrchMeshdForward(program);
  program.addCommand(validateCommand(io.stdout, io.setExitCode));
  program.addCommand(analyzeCommand(io));
  program.addCommand(proxyConfigCommand(io));
  program.addCommand(proxyStatusCommand(io));
  program.addCommand(adminCommand(io));
  program.addCommand(
    experimentalCommand([
      authzCommand(io),
      proxyStatsCommand(io),
      proxyStatusCommand(io),
      internalDebugCommand(io),
      versionCommand(io),
      workloadCommand(io),
      ...diagnoseExperimentalCommands(io),
      metricsCommand(io),
    ]),
  );
  for (const c of diagnoseCommands(io)) program.addCommand(c);
  program.addCommand(optionsCommand(() => program, io.stdout));
  program.addCommand(versionCommand(io));
  for (const c of [...installCommands(io), tagCommand(io), orchInjectCommand(io)]) program.addCommand(c);
  program.addCommand(completionCommand(() => program, io.stdout, COMPLETE_COMMAND));
  program.addCommand(
    notYetCommand("waypoint", "Manage waypoint configuration", AMBIENT, [
      "apply",
      "delete",
      "generate",
      "list",
      "status",
    ]),
  );
  program.addCommand(
    notYetCommand("nodeproxy-config", "Retrieve or update node-proxy configuration", AMBIENT, [
      "all",
      "certificate",
      "connections",
      "log",
      "policy",
      "service",
      "workload",
    ]),
  );
  const all = (c: CommandUnknownOpts): CommandUnknownOpts[] => [c, ...c.commands.flatMap(all)];
  for (const c of all(program)) c.configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  return program;
}

/**
 * Runs meshctl with the given arguments (without the program name).
 *
 * @returns the exit code: 0 on success, 1 on a failed check or an error, 2 on bad usage
 */
export async function runMeshctl(args: string[], io: CliIo): Promise<number> {
  let code = 0;
  const program = buildProgram({ ...io, setExitCode: (c) => (code = c) });
  const all = (c: CommandUnknownOpts): CommandUnknownOpts[] => [c, ...c.commands.flatMap(all)];
  for (const c of all(program)) c.exitOverride();
  if (args[0] === COMPLETE_COMMAND) return await runComplete(args.slice(1), program, io.stdout);
  const inlined = inlineBoolFlags(args, program);
  const problem = checkCommand(inlined, program);
  if (problem) {
    io.stderr(`error: ${problem.message}\n`);
    return problem.exitCode;
  }
  try {
    await program.parseAsync(inlined, { from: "user" });
  } catch (e) {
    const err = e as { code?: unknown; exitCode?: number; message: string };
    if (
      err.code === "commander.helpDisplayed" || err.code === "commander.version" ||
      err.code === "commander.help"
    ) {
      return 0;
    }
    if (typeof err.code === "string" && err.code.startsWith("commander.")) return err.exitCode === 0 ? 0 : 2;
    io.stderr(`error: ${err.message}\n`);
    return 1;
  } finally {
    await closeLabMode(program);
    await closeOrchXdsMode(program);
  }
  return code;
}

/**
 * Go's pflag booleans take a value only as `--flag=false`; commander's optional values (`--flag [bool]`)
 * would take the next argument too (`analyze --color dir` would read `dir` as the value). A bare
 * boolean flag of the command being run (or its parents) becomes `--flag=true`, so the next argument
 * stays an argument.
 */
export function inlineBoolFlags(args: string[], program: CommandUnknownOpts): string[] {
  const chain = [program];
  for (const a of args) {
    const next = chain[chain.length - 1].commands.find((c) => c.name() === a || c.aliases().includes(a));
    if (next) chain.push(next);
  }
  const names = new Map<string, string>();
  for (const c of chain) {
    for (const o of c.options) {
      if (!o.flags.endsWith("[bool]") || !o.long) continue;
      names.set(o.long, o.long);
      if (o.short) names.set(o.short, o.long);
    }
  }
  return args.map((a) => names.has(a) ? `${names.get(a)}=true` : a);
}
