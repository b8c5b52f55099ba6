/**
 * `meshctl x config list` (meshctl seed, "experimental": "Lists configurable defaults"; istioctl's
 * `x config list`, which shows each default with where its value comes from). meshctl has no defaults
 * file (istioctl's ~/.istioctl/config.yaml): its defaults come from the environment, so the list shows
 * each such setting, its value and `env <NAME>` or `default`. A token's value is never printed.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { table } from "../output.ts";
import { DEFAULT_DEBUG_ADDRESS } from "../meshd_client.ts";
import { DEFAULT_XDS_PORT, XDS_TOKEN_ENV } from "../debug_flags.ts";
import { LAB_ENV } from "../lab_connector.ts";
import { DEFAULT_MESH_NAMESPACE } from "../global_options.ts";

/** One configurable default. */
export interface ConfigDefault {
  flag: string;
  value: string;
  from: string;
}

/** The settings and the environment variables that set them (undefined: none). */
const SETTINGS: readonly [string, string | undefined, string, boolean][] = [
  ["debug-address", "MESHCTL_DEBUG_ADDRESS", DEFAULT_DEBUG_ADDRESS, false],
  ["lab", LAB_ENV, "", false],
  ["meshNamespace", undefined, DEFAULT_MESH_NAMESPACE, false],
  ["orchconfig", "KUBECONFIG", "~/.kube/config", false],
  ["xds-port", undefined, String(DEFAULT_XDS_PORT), false],
  ["xds-token", XDS_TOKEN_ENV, "", true],
];

/** The defaults as `env` gives them. */
export function configDefaults(env: Record<string, string | undefined>): ConfigDefault[] {
  return SETTINGS.map(([flag, name, fallback, secret]) => {
    const set = name !== undefined && env[name] ? env[name]! : undefined;
    if (set === undefined) return { flag, value: fallback, from: "default" };
    return { flag, value: secret ? "(set, not shown)" : set, from: `env ${name}` };
  });
}

/** Builds `config` with `config list`. */
export function configCommand(io: CliIo): CommandUnknownOpts {
  return new Command("config").description("meshctl's configurable defaults").addCommand(
    new Command("list").description("List the configurable defaults and where their values come from")
      .action(() => {
        const rows = configDefaults(Deno.env.toObject()).map((d) => [d.flag, d.value, d.from]);
        io.stdout(table(["FLAG", "VALUE", "FROM"], rows));
      }),
  );
}
