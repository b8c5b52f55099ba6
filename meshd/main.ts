/**
 * meshd entry point. PARTIAL: only `meshd version` exists; the discovery server (`meshd discovery`),
 * `meshd request` and `meshd completion` come with issue #3.
 *
 * @module
 */
import { Command } from "@commander-js/extra-typings";
import { buildInfo } from "../shared/mod.ts";

if (import.meta.main) {
  const program = new Command("meshd")
    .description(
      "The mesh control plane. PARTIAL: only `version` is implemented; `discovery` comes with issue #3",
    )
    .option("--vklog <level>", "log verbosity, like -v", "0");
  program.command("version")
    .description("Print build information")
    .action(() => console.log(`meshd version: ${buildInfo().version}`));
  await program.parseAsync(Deno.args, { from: "user" });
}
