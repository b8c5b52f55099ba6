/**
 * `meshctl version` (meshctl seed, "version"): the client's build information and, unless
 * `--remote=false`, meshd's (its version debug page, at `--debug-address` or over xDS with
 * `--xds-address`). An unreachable meshd is a
 * warning on standard error, not a failure: the client version is still printed.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { stringify } from "yaml";
import { type BuildInfo, buildInfo } from "../../shared/mod.ts";
import type { CliIo } from "../cli_io.ts";
import { addDebugFlags, meshdClient } from "../debug_flags.ts";
import { parseBool } from "../../shared/internal/cli/pflag.ts";

/** meshd's /debug/version answer. */
type MeshdVersion = BuildInfo & { component: string };

/** Builds the `version` command. */
export function versionCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("version")
    .description("Print the client's and the control plane's (meshd's) build information")
    .addOption(new Option("-o, --output <format>", "yaml or json").choices(["yaml", "json"] as const))
    .option(
      "-s, --short [bool]",
      "print only the version; --short=false for full information",
      parseBool,
      true,
    )
    .option(
      "--remote [bool]",
      "also ask meshd (--debug-address or --xds-address); --remote=false skips it",
      parseBool,
      true,
    )
    .option("-r, --revision <revision>", "control plane revision (no effect: one meshd)", "");
  addDebugFlags(cmd);
  cmd.action(async (opts, command) => {
    const info = buildInfo();
    let remote: MeshdVersion | undefined;
    if (opts.remote) {
      const client = meshdClient(command.opts());
      try {
        remote = await client.json<MeshdVersion>("/debug/version");
      } catch (e) {
        io.stderr(
          `warning: control plane version unavailable: ${(e as Error).message} (--remote=false skips it)\n`,
        );
      }
    }
    const brief = opts.short && !opts.output;
    const client = brief ? { version: info.version } : info;
    const doc: Record<string, unknown> = { clientVersion: client };
    if (remote) {
      doc.meshVersion = [{ Component: remote.component, Info: brief ? { version: remote.version } : remote }];
    }
    if (opts.output === "json") return io.stdout(JSON.stringify(doc, null, 2) + "\n");
    if (opts.output === "yaml") return io.stdout(stringify(doc));
    if (opts.short) {
      io.stdout(`client version: ${info.version}\n`);
      if (remote) io.stdout(`control plane version: ${remote.version}\n`);
      return;
    }
    io.stdout(Object.entries(info).map(([k, v]) => `${k}: ${v}`).join("\n") + "\n");
    if (remote) io.stdout(Object.entries(remote).map(([k, v]) => `meshd ${k}: ${v}`).join("\n") + "\n");
  });
  return cmd;
}
