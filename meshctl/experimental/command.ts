/**
 * `meshctl experimental` (alias `x`; meshctl seed, "experimental"): the group of commands that may
 * change. Holds proxy-stats, proxy-status, internal-debug, version and workload.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";

/** Builds the group around the given subcommands. */
export function experimentalCommand(subcommands: CommandUnknownOpts[]): CommandUnknownOpts {
  const group = new Command("experimental").alias("x")
    .description(
      "Experimental commands that may change (authz check/explain are not here yet: they wait for the shared " +
        "authorization evaluator)",
    );
  for (const c of subcommands) group.addCommand(c);
  return group;
}
