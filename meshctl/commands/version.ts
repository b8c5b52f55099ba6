/**
 * `meshctl version`: client build information (meshctl seed, "version"). The control plane part
 * (`--remote`) needs meshd's version API and is not there yet.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { stringify } from "yaml";
import { buildInfo } from "../../shared/mod.ts";

/** Builds the `version` command; output goes to `write`. */
export function versionCommand(write: (text: string) => void): CommandUnknownOpts {
  return new Command("version")
    .description("Print the client's build information (the control plane's is not available yet)")
    .addOption(new Option("-o, --output <format>", "yaml or json").choices(["yaml", "json"] as const))
    .option(
      "-s, --short [bool]",
      "print only the version; --short=false for full information",
      parseBool,
      true,
    )
    .option(
      "--remote [bool]",
      "also query the control plane (not implemented yet: meshd has no version API)",
      parseBool,
      false,
    )
    .option("-r, --revision <revision>", "control plane revision (no effect yet: no control plane query)", "")
    .action((opts) => {
      if (opts.remote) {
        throw new Error(
          "--remote is not implemented yet: meshd does not serve its version; use --remote=false",
        );
      }
      const info = buildInfo();
      const client = opts.short && !opts.output ? { version: info.version } : info;
      if (opts.output === "json") write(JSON.stringify({ clientVersion: client }, null, 2) + "\n");
      else if (opts.output === "yaml") write(stringify({ clientVersion: client }));
      else if (opts.short) write(`client version: ${info.version}\n`);
      else write(Object.entries(info).map(([k, v]) => `${k}: ${v}`).join("\n") + "\n");
    });
}

/** Parses `--flag`, `--flag=true` and `--flag=false` the way Go's pflag does for booleans. */
export function parseBool(value: string | undefined): boolean {
  if (value === undefined || value === "" || value === "true") return true;
  if (value === "false") return false;
  throw new Error(`expected true or false, got "${value}"`);
}
