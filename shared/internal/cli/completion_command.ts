/**
 * `completion bash|zsh|fish|powershell [--no-descriptions]`, the command meshctl and meshd share
 * (meshctl seed, "completion"; meshd seed, "Command tree").
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import { completionScript, SHELLS } from "./completion.ts";

/**
 * Builds the `completion` group; `root` is the program whose tree is completed. With `dynamic` (the
 * name of the program's hidden cobra-style `__complete` command), the bash, zsh and fish scripts also
 * ask the program for argument and flag values.
 */
export function completionCommand(
  root: () => CommandUnknownOpts,
  write: (text: string) => void,
  dynamic?: string,
): CommandUnknownOpts {
  const group = new Command("completion")
    .description("Print a shell completion script (bash, zsh, fish or powershell)");
  for (const shell of SHELLS) {
    group.command(shell)
      .description(
        `Print the ${shell} completion script; source it, or save it where ${shell} loads completions`,
      )
      .option("--no-descriptions", "leave out completion descriptions")
      .action((opts) => write(completionScript(root(), shell, { descriptions: opts.descriptions, dynamic })));
  }
  return group;
}
