/**
 * Warnings for flags that are accepted but have no effect. Such a flag says so in its `--help`
 * description, as `(no effect: why)` or `(no effect yet: why)`; when one is given on the command
 * line, meshctl warns once, naming it and why (issue 13, "Settings tell the truth").
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";

const NO_EFFECT = /\(no effect(?: yet)?: ([^)]*)\)/;

/** Why a flag has no effect, from its description; undefined when it has an effect. */
export function noEffectReason(description: string): string | undefined {
  return NO_EFFECT.exec(description)?.[1];
}

/**
 * One warning per flag without effect given on the command line to `action` or to a command above
 * it (the root's common flags included).
 */
export function inertFlagWarnings(action: CommandUnknownOpts): string[] {
  const warnings: string[] = [];
  for (let c: CommandUnknownOpts | null = action; c; c = c.parent) {
    for (const o of c.options) {
      const reason = noEffectReason(o.description);
      if (reason !== undefined && c.getOptionValueSource(o.attributeName()) === "cli") {
        warnings.push(`${o.long ?? o.short} has no effect: ${reason}`);
      }
    }
  }
  return warnings;
}
