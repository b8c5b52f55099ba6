/**
 * Shell completion scripts generated from a commander program's command tree, for bash, zsh, fish
 * and PowerShell, as cobra's `completion` command prints them (meshctl and meshd seeds,
 * "completion"). Commands, aliases and flags complete from the script itself. With `dynamic`, the bash,
 * zsh and fish scripts also run `<program> <dynamic> <words…> <current word>` (cobra's `__complete`
 * protocol: one candidate per line, `name<TAB>description` allowed, then a `:<directive>` line) for
 * values: after a flag that takes one, only its candidates; elsewhere they are added to the
 * subcommands (flags are offered once a word starts with `-`, as cobra does). PowerShell's script stays static.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";

/** The shells a script can be printed for. */
export const SHELLS = ["bash", "zsh", "fish", "powershell"] as const;
/** One of {@link SHELLS}. */
export type Shell = typeof SHELLS[number];

interface Node {
  path: string[];
  description: string;
  /** Names and aliases of the subcommands, each with the canonical name it stands for. */
  subcommands: { name: string; canonical: string; description: string }[];
  flags: { name: string; description: string }[];
}

function flatten(cmd: CommandUnknownOpts, path: string[], inherited: Node["flags"]): Node[] {
  const flags = [
    ...inherited,
    ...cmd.options.flatMap((o) =>
      [o.long, o.short].filter((f): f is string => !!f).map((name) => ({ name, description: o.description }))
    ),
    { name: "--help", description: "show help" },
  ];
  const subs = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
  const node: Node = {
    path,
    description: cmd.description(),
    subcommands: subs.flatMap((c) =>
      [c.name(), ...c.aliases()].map((name) => ({ name, canonical: c.name(), description: c.description() }))
    ),
    flags,
  };
  // Global (program-level) flags are accepted after any subcommand, as commander parses them.
  const passDown = path.length === 0 ? flags.filter((f) => f.name !== "--help") : inherited;
  return [node, ...subs.flatMap((c) => flatten(c, [...path, c.name()], passDown))];
}

/**
 * The completion script of a program for one shell.
 *
 * @param program the root command; its name is the command completed
 * @param options `descriptions: false` for --no-descriptions; `dynamic`: the hidden command to ask
 */
export function completionScript(
  program: CommandUnknownOpts,
  shell: Shell,
  options: { descriptions: boolean; dynamic?: string },
): string {
  const nodes = flatten(program, [], []);
  const name = program.name();
  const fn = `__${name.replace(/[^A-Za-z0-9]/g, "_")}`;
  const q = (s: string) => s.replace(/'/g, "'\\''");
  switch (shell) {
    case "bash":
    case "zsh": {
      const cases = nodes.map((n) => {
        const words = [...n.subcommands.map((s) => s.name), ...n.flags.map((f) => f.name)].join(" ");
        return `    "${n.path.join(" ")}") words='${q(words)}' ;;`;
      }).join("\n");
      const aliasMap = nodes.flatMap((n) =>
        n.subcommands.map((s) =>
          `    "${[...n.path, s.name].join(" ")}") path="${[...n.path, s.canonical].join(" ")}" ;;`
        )
      ).join("\n");
      const bash = `# ${shell} completion for ${name}
${fn}_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" word words next i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    [[ "$word" == -* ]] && continue
    next="\${path:+$path }$word"
    case "$next" in
${aliasMap}
    *) continue ;;
    esac
  done
  case "$path" in
${cases}
    *) words='' ;;
  esac${
        options.dynamic
          ? `
  if [[ "$cur" != -* ]]; then
    local dynamic prev="\${COMP_WORDS[COMP_CWORD-1]}"
    dynamic=$(${name} ${options.dynamic} "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null | grep -v '^:' | cut -f1)
    words="$(printf '%s\\n' $words | grep -v '^-') $dynamic"
    if [[ "$prev" == -* && -n "$dynamic" ]]; then words="$dynamic"; fi
  fi`
          : ""
      }
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F ${fn}_complete ${name}
`;
      return shell === "bash" ? bash : `#compdef ${name}
# zsh completion for ${name}, through zsh's bash-completion compatibility.
autoload -U +X bashcompinit && bashcompinit
${bash.split("\n").slice(1).join("\n")}`;
    }
    case "fish": {
      const lines = [`# fish completion for ${name}`, `complete -c ${name} -f`];
      for (const n of nodes) {
        const cond = n.path.length === 0
          ? "__fish_use_subcommand"
          : `__fish_seen_subcommand_from ${n.path.at(-1)}`;
        for (const s of n.subcommands) {
          const d = options.descriptions ? ` -d '${q(s.description)}'` : "";
          lines.push(`complete -c ${name} -n '${cond}' -a '${s.name}'${d}`);
        }
        for (const f of n.flags) {
          const flag = f.name.startsWith("--") ? `-l ${f.name.slice(2)}` : `-s ${f.name.slice(1)}`;
          const d = options.descriptions ? ` -d '${q(f.description)}'` : "";
          lines.push(`complete -c ${name} -n '${cond}' ${flag}${d}`);
        }
      }
      if (options.dynamic) {
        lines.push(
          `complete -c ${name} -a '(${name} ${options.dynamic} (commandline -opc)[2..-1] (commandline -ct) ` +
            `2>/dev/null | string match -rv "^:" | string replace -r "\\t.*" "")'`,
        );
      }
      return lines.join("\n") + "\n";
    }
    case "powershell": {
      const table = nodes.map((n) => {
        const items = [...n.subcommands, ...n.flags].map((i) =>
          `@('${i.name.replace(/'/g, "''")}', '${
            (options.descriptions ? i.description || i.name : i.name).replace(/'/g, "''")
          }')`
        ).join(", ");
        return `  '${n.path.join(" ")}' = @(${items})`;
      }).join("\n");
      return `# PowerShell completion for ${name}
$${fn}Tree = @{
${table}
}
Register-ArgumentCompleter -Native -CommandName '${name}' -ScriptBlock {
  param($wordToComplete, $commandAst, $cursorPosition)
  $path = ''
  foreach ($el in $commandAst.CommandElements | Select-Object -Skip 1) {
    $w = $el.ToString()
    if ($w -eq $wordToComplete -or $w.StartsWith('-')) { continue }
    $next = if ($path) { "$path $w" } else { $w }
    if ($${fn}Tree.ContainsKey($next)) { $path = $next }
  }
  foreach ($item in $${fn}Tree[$path]) {
    if ($item[0] -like "$wordToComplete*") {
      [System.Management.Automation.CompletionResult]::new($item[0], $item[0], 'ParameterValue', $item[1])
    }
  }
}
`;
    }
  }
}
