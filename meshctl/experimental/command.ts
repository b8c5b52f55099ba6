/**
 * `meshctl experimental` (alias `x`; meshctl seed, "experimental"): the group of commands that may
 * change. Holds authz, proxy-stats, proxy-status, internal-debug, metrics, version and workload.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";

/** Builds the group around the given subcommands. */
export function experimentalCommand(subcommands: CommandUnknownOpts[]): CommandUnknownOpts {
  const group = new Command("experimental").alias("x")
    .description("Experimental commands that may change");
  for (const c of subcommands) group.addCommand(c);
  return group;
}
