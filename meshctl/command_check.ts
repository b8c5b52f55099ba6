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

/** Where {@link walkArgs} got to. */
export interface ArgsWalk {
  /** The commands named, from the root. */
  chain: CommandUnknownOpts[];
  /** The arguments after the last command that are not options or option values. */
  positionals: string[];
  /** Option values given, by attribute name (`namespace`, `asGroup`…), in order; `--x=v` included. */
  values: Map<string, string[]>;
  /** The first word that names no subcommand of a group without an action of its own. */
  unknown?: string;
}

function optionOf(token: string, chain: CommandUnknownOpts[]) {
  for (let i = chain.length - 1; i >= 0; i--) {
    const o = chain[i].options.find((o) => o.long === token || o.short === token);
    if (o) return o;
  }
  return undefined;
}

/**
 * Walks `args` (after {@link inlineBoolFlags}-style rewriting) down the command tree, skipping options
 * and their values, as commander will parse them.
 */
export function walkArgs(args: string[], program: CommandUnknownOpts): ArgsWalk {
  const walk: ArgsWalk = { chain: [program], positionals: [], values: new Map() };
  const record = (key: string, value: string) =>
    walk.values.set(key, [...(walk.values.get(key) ?? []), value]);
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const current = walk.chain[walk.chain.length - 1];
    if (a === "--") {
      walk.positionals.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith("-") && a !== "-") {
      const eq = a.indexOf("=");
      const o = optionOf(eq > 0 ? a.slice(0, eq) : a, walk.chain);
      if (o && eq > 0) record(o.attributeName(), a.slice(eq + 1));
      else if (o && (o.required || o.optional) && !o.flags.endsWith("[bool]") && i + 1 < args.length) {
        record(o.attributeName(), args[++i]);
      }
      continue;
    }
    const next = walk.positionals.length > 0 || NOT_YET.has(current)
      ? undefined
      : current.commands.find((c) => c.name() === a || c.aliases().includes(a));
    if (next) {
      walk.chain.push(next);
      continue;
    }
    if (
      walk.unknown === undefined && walk.positionals.length === 0 && current.commands.length > 0 &&
      !NOT_YET.has(current) && !hasAction(current) && a !== "help"
    ) {
      walk.unknown = a;
    }
    walk.positionals.push(a);
  }
  return walk;
}

/**
 * Checks `args` before commander parses them.
 *
 * @returns the problem: an unknown subcommand of a group that has no action of its own, or a
 *   not-yet command; undefined when commander may parse the arguments
 */
export function checkCommand(args: string[], program: CommandUnknownOpts): CommandProblem | undefined {
  const walk = walkArgs(args, program);
  const leaf = walk.chain[walk.chain.length - 1];
  // `help <command…>` (commander's help command) names a command too.
  if (walk.positionals[0] === "help" && walk.positionals.length > 1 && !hasAction(leaf)) {
    return checkCommand(walk.positionals.slice(1), leaf);
  }
  if (walk.unknown !== undefined) {
    const path = pathOf(walk.chain[walk.chain.length - 1]);
    return {
      message: `unknown command "${walk.unknown}" for "${path}"\nRun '${path} --help' for usage.`,
      exitCode: 2,
    };
  }
  for (const c of walk.chain) {
    const reason = NOT_YET.get(c);
    if (reason !== undefined) return { message: `${pathOf(c)}: not available yet: ${reason}`, exitCode: 1 };
  }
  return undefined;
}
