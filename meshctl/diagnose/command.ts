/**
 * The diagnose commands that read a cluster (issue 15, item 3), for cli.ts to register:
 * `x check-inject`, `x describe pod|service`, `x injector list`, `x precheck`, `x config list` under
 * `experimental`, and
 * `create-remote-secret`, `remote-clusters`, `dashboard` and `bug-report` at the top level.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { commandOrchClient, type OrchClient } from "../orch/orch_client.ts";
import { inputFromCluster } from "../analyze/live/cluster_input.ts";
import type { AnalysisInput } from "../analyze/input.ts";
import { checkInjectCommand } from "./check_inject.ts";
import { describePod, describeService } from "./describe.ts";
import { injectorListCommand } from "./injector_list.ts";
import { precheckCommand } from "./precheck.ts";
import { configCommand } from "./config_list.ts";
import { createRemoteSecretCommand } from "./remote_secret.ts";
import { dashboardCommand } from "./dashboard.ts";
import { bugReportCommand } from "./bug_report.ts";
import { remoteClustersCommand } from "./remote_clusters.ts";

/** Runs `fn` with the cluster read for analysis, closing the client after. */
async function withClusterInput<T>(
  command: CommandUnknownOpts,
  fn: (input: AnalysisInput, orch: OrchClient) => T,
): Promise<T> {
  const orch = commandOrchClient(command);
  try {
    return fn(await inputFromCluster(orch.api, orch.meshNamespace, orch.description), orch);
  } finally {
    await orch.close();
  }
}

/** `name[.namespace]` with -n (or the context's namespace) as the default. */
function nameAndNamespace(arg: string, fallback: string): { name: string; namespace: string } {
  const dot = arg.indexOf(".");
  return dot < 0
    ? { name: arg, namespace: fallback }
    : { name: arg.slice(0, dot), namespace: arg.slice(dot + 1) };
}

function describeCommand(io: CliIo): CommandUnknownOpts {
  const ignore = (c: Command<[string], { ignoreUnmeshed?: true }>) =>
    c.option("--ignoreUnmeshed", "suppress the warning for pods without the mesh proxy");
  const pod = ignore(
    new Command("pod").alias("po").description("Describe the mesh config that applies to a pod, and why")
      .argument("<pod>", "pod name, optionally <name>.<namespace>"),
  ).action(async (arg, opts, command) => {
    await withClusterInput(command, (input, orch) => {
      const { name, namespace } = nameAndNamespace(arg, orch.namespace);
      const p = input.cluster!.pods.find((x) => x.name === name && x.namespace === namespace);
      if (!p) throw new Error(`pod ${name} not found in namespace ${namespace}`);
      io.stdout(describePod(input, p, opts.ignoreUnmeshed));
    });
  });
  const svc = ignore(
    new Command("service").alias("svc").description(
      "Describe the mesh config that applies to a service's pods",
    )
      .argument("<svc>", "service name, optionally <name>.<namespace>"),
  ).action(async (arg, opts, command) => {
    await withClusterInput(command, (input, orch) => {
      const { name, namespace } = nameAndNamespace(arg, orch.namespace);
      const s = input.cluster!.services.find((x) => x.name === name && x.namespace === namespace);
      if (!s) throw new Error(`service ${name} not found in namespace ${namespace}`);
      io.stdout(describeService(input, s, opts.ignoreUnmeshed));
    });
  });
  return new Command("describe").alias("des")
    .description(
      "Describe the mesh configuration that affects a pod or service, read from the cluster (not from the " +
        "proxy: what a proxy actually received is `proxy-config`)",
    )
    .addCommand(pod).addCommand(svc);
}

/** The `experimental` subcommands of this folder. */
export function diagnoseExperimentalCommands(io: CliIo): CommandUnknownOpts[] {
  return [
    checkInjectCommand(io),
    describeCommand(io),
    new Command("injector").description("Sidecar injector webhooks").addCommand(injectorListCommand(io)),
    precheckCommand(io),
    configCommand(io),
  ];
}

/** The top-level commands of this folder. */
export function diagnoseCommands(io: CliIo): CommandUnknownOpts[] {
  return [
    createRemoteSecretCommand(io),
    remoteClustersCommand(io),
    dashboardCommand(io),
    bugReportCommand(io),
  ];
}
