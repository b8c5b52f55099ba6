/**
 * The flags install, upgrade, `manifest generate|install|translate` and uninstall share (seed 002
 * "install", "manifest", "uninstall"), and the spec they build (profile.ts).
 *
 * @module
 */
import { type Command, Option } from "@commander-js/extra-typings";
import { collectArray, collectStrings } from "../../shared/internal/cli/pflag.ts";
import type { CliIo } from "../cli_io.ts";
import { applySets, buildSpec, installResourceSpecs, type InstallSpec, overlay } from "./profile.ts";

/** The spec flags as commander parses them. */
export interface SpecFlags {
  filename: string[];
  set: string[];
  revision: string;
  manifests?: string;
  charts?: string;
  force?: boolean;
}

/** Adds `-f`, `-s/--set`, `-r`, `-d/--manifests`, `--charts` and `--force`. */
// deno-lint-ignore no-explicit-any
export function addSpecFlags<C extends Command<any, any, any>>(cmd: C, single = false): C {
  cmd.addOption(
    new Option(
      "-f, --filename <files>",
      "install resource file(s) (MeshOperator or IstioOperator), overlaid left to right",
    )
      .argParser(collectStrings).default([] as string[]),
  );
  cmd.addOption(
    new Option(
      "-s, --set <path=value>",
      "override a value, e.g. profile=demo, components.ingressGateway.enabled=false, meshConfig.trustDomain=x (dots in a key escaped with \\)",
    )
      .argParser(collectArray).default([] as string[]),
  );
  cmd.option("-r, --revision <revision>", "target control plane revision", "");
  cmd.option(
    "-d, --manifests <dir>",
    "directory of charts and profiles (no effect: the manifests are built in)",
  );
  if (!single) {
    cmd.option("--charts <dir>", "deprecated, use --manifests (no effect: the manifests are built in)");
  }
  cmd.option("--force", "proceed despite validation errors");
  return cmd;
}

/**
 * The spec flags of `command`, decoded from commander's untyped record.
 *
 * @throws Error naming the flag when a value has the wrong type
 */
// deno-lint-ignore no-explicit-any
export function specFlags(command: Command<any, any, any>): SpecFlags {
  const o: Record<string, unknown> = command.opts();
  const strings = (k: string): string[] => {
    const v = o[k] ?? [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) {
      throw new Error(`--${k}: expected strings`);
    }
    return v;
  };
  return {
    filename: strings("filename"),
    set: strings("set"),
    revision: typeof o.revision === "string" ? o.revision : "",
    force: o.force === true,
  };
}

/**
 * Reads the `-f` files, applies `--set`, builds the spec, and reports problems: warnings always, errors
 * as a failure unless `--force` (seed 002 "Errors" 2).
 *
 * @throws Error listing the validation errors when there are some and `--force` is not given
 */
export async function specFromFlags(flags: SpecFlags, io: CliIo): Promise<InstallSpec> {
  let user: Record<string, unknown> = {};
  for (const file of flags.filename) {
    const text = file === "-"
      ? await new Response(Deno.stdin.readable).text()
      : await Deno.readTextFile(file).catch(
        (e) => {
          throw new Error(`-f ${file}: ${(e as Error).message}`);
        },
      );
    for (const s of installResourceSpecs(text, file)) user = overlay(user, s);
  }
  user = applySets(user, flags.set);
  const { spec, problems } = buildSpec(user, flags.revision);
  for (const w of problems.warnings) io.stderr(`warning: ${w}\n`);
  if (problems.errors.length > 0) {
    const text = problems.errors.map((e) => `  ${e}`).join("\n");
    if (!flags.force) throw new Error(`the install resource is invalid (--force proceeds anyway):\n${text}`);
    io.stderr(`warning: proceeding despite validation errors (--force):\n${text}\n`);
  }
  return spec;
}

/** Asks `question` unless `--skip-confirmation`; a non-interactive stdin answers no. */
export function confirmed(question: string, skip: boolean | undefined, io: CliIo): boolean {
  if (skip) return true;
  if (!Deno.stdin.isTerminal()) {
    io.stderr(`${question} (y/N) no: standard input is not a terminal; use -y/--skip-confirmation\n`);
    return false;
  }
  const answer = prompt(`${question} (y/N)`) ?? "";
  return /^y(es)?$/i.test(answer.trim());
}
