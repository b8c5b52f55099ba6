/**
 * Missing and not-yet commands are errors (issue 15, item 4). commander prints a group's help and exits
 * 0 for `meshctl <unknown> --help`, and some groups print their help for an unknown subcommand; cobra
 * (istioctl) answers `Error: unknown command "x" for "istioctl"` and exits non-zero. {@link checkCommand}
 * walks the arguments through the command tree before commander parses them, so a command another
 * change registers is known at once, without a list here.
 *
 * A command that exists in the seed but cannot work yet (ambient mode's `waypoint`,
 * `nodeproxy-config`) is built with {@link notYetCommand}: its `--help` says why, and running it, or
 * asking for its help, exits non-zero.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";

const NOT_YET = new WeakMap<CommandUnknownOpts, string>();

/** What {@link checkCommand} found wrong, and the exit code for it. */
export interface CommandProblem {
  /** The message, one or two lines, without the `error: ` prefix. */
  message: string;
  /** 2 for an unknown command (bad usage), 1 for a command that does not work yet. */
  exitCode: number;
}

/**
 * Builds a command of the seed that is not available yet, with its subcommands (each also not yet).
 *
 * @param name the command's name
 * @param description what it does, in the seed's words
 * @param reason why it does not work yet, e.g. `needs ambient mode, which the mesh does not have (issue 15)`
 * @param subcommands names of its subcommands in the seed
 */
export function notYetCommand(
  name: string,
  description: string,
  reason: string,
  subcommands: string[] = [],
): CommandUnknownOpts {
  const command: CommandUnknownOpts = new Command(name)
    .description(`${description} (not yet: ${reason})`)
    .allowUnknownOption()
    .allowExcessArguments();
  NOT_YET.set(command, reason);
  for (const sub of subcommands) command.addCommand(notYetCommand(sub, `${name} ${sub}`, reason));
  return command;
}

/** The `meshctl a b` path of a command. */
function pathOf(c: CommandUnknownOpts): string {
  const names: string[] = [];
  for (let x: CommandUnknownOpts | null = c; x; x = x.parent) names.unshift(x.name());
  return names.join(" ");
}

function hasAction(c: CommandUnknownOpts): boolean {
  return (c as unknown as { _actionHandler?: unknown })._actionHandler != null;
}

/** Whether option token `token` (without `=value`) of the commands in `chain` takes a separate value. */
function takesValue(token: string, chain: CommandUnknownOpts[]): boolean {
  for (const c of chain) {
    const o = c.options.find((o) => o.long === token || o.short === token);
    if (o) return (o.required || o.optional) && !o.flags.endsWith("[bool]");
  }
  return false;
}

/**
 * Walks `args` (after {@link inlineBoolFlags}-style rewriting) down the command tree.
 *
 * @returns the problem: an unknown subcommand of a group that has no action of its own, or a
 *   not-yet command; undefined when commander may parse the arguments
 */
export function checkCommand(args: string[], program: CommandUnknownOpts): CommandProblem | undefined {
  const chain = [program];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const current = chain[chain.length - 1];
    if (a === "--") break;
    if (a.startsWith("-") && a !== "-") {
      const bare = /^--[^=]+$/.test(a) || /^-[^-]$/.test(a);
      if (bare && takesValue(a, chain)) i++;
      continue;
    }
    if (current.commands.length === 0 || NOT_YET.has(current)) break;
    if (a === "help" && !hasAction(current)) continue;
    const next = current.commands.find((c) => c.name() === a || c.aliases().includes(a));
    if (next) {
      chain.push(next);
      continue;
    }
    if (hasAction(current)) break;
    const path = pathOf(current);
    return { message: `unknown command "${a}" for "${path}"\nRun '${path} --help' for usage.`, exitCode: 2 };
  }
  for (const c of chain) {
    const reason = NOT_YET.get(c);
    if (reason !== undefined) return { message: `${pathOf(c)}: not available yet: ${reason}`, exitCode: 1 };
  }
  return undefined;
}
