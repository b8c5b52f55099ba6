/**
 * `meshctl experimental internal-debug <debug type>` (meshctl seed, "experimental"): one of meshd's
 * debug pages as JSON, over HTTP (`--debug-address`) or over xDS (`--xds-address`, type URL
 * `istio.io/debug/<debug type>`), e.g. `syncz`, `configz`, `registryz`, `connections`, `mesh`, `version`,
 * `config_dump?proxyID=foo/httpbin-1`.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { addDebugFlags, meshdClient } from "../debug_flags.ts";

/** Builds the `internal-debug` command. */
export function internalDebugCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("internal-debug")
    .description(
      "Print one of meshd's debug endpoints (syncz, configz, registryz, connections, config_dump, ...)",
    )
    .argument("<debug-type>", "the endpoint under /debug/, e.g. syncz or config_dump?proxyID=foo/httpbin-1")
    .option("--all", "ask every meshd instance (no effect: the one at --debug-address or --xds-address)");
  addDebugFlags(cmd);
  cmd.action(async (type, _opts, command) => {
    const client = meshdClient(command.opts());
    const path = `/debug/${type.replace(/^\/?(debug\/)?/, "")}`;
    const text = await client.text(path);
    try {
      io.stdout(JSON.stringify(JSON.parse(text), null, 2) + "\n");
    } catch {
      io.stdout(text);
    }
  });
  return cmd;
}
