/**
 * `meshctl experimental workload` (meshctl seed, "experimental"): `group create` and `entry configure`.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { entryConfigureCommand } from "./entry_configure.ts";
import { groupCreateCommand } from "./group_create.ts";

/** Builds the `workload` group. */
export function workloadCommand(io: CliIo): CommandUnknownOpts {
  return new Command("workload").description("Configure workloads outside the orchestrator (VMs)")
    .addCommand(new Command("group").description("WorkloadGroups").addCommand(groupCreateCommand(io)))
    .addCommand(
      new Command("entry").description("WorkloadEntry configuration").addCommand(entryConfigureCommand(io)),
    );
}
