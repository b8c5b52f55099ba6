/**
 * The common flags of the meshctl seed ("Common flags") that commands read, decoded once from
 * commander's untyped option record, so that no command casts it.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";

/** `-i, --meshNamespace`'s default: the mesh system namespace, also the root namespace. */
export const DEFAULT_MESH_NAMESPACE = "mesh-system";

/** The common flags a command reads. */
export interface GlobalOptions {
  /** `-n, --namespace`: namespace for resources that name none; empty when not given. */
  namespace: string;
  /** `-i, --meshNamespace`: the mesh system (root) namespace. */
  meshNamespace: string;
}

/**
 * Reads the common flags as the root command parsed them. A command built on its own (as some
 * tests do) has no root; it gets the root's defaults.
 *
 * @throws Error naming the flag when commander holds a value that is not a string
 */
export function globalOptions(command: CommandUnknownOpts): GlobalOptions {
  const opts: Record<string, unknown> = command.optsWithGlobals();
  return {
    namespace: stringFlag(opts, "namespace", "--namespace", ""),
    meshNamespace: stringFlag(opts, "meshNamespace", "--meshNamespace", DEFAULT_MESH_NAMESPACE),
  };
}

function stringFlag(opts: Record<string, unknown>, key: string, flag: string, fallback: string): string {
  const value = opts[key];
  if (value === undefined) return fallback;
  if (typeof value !== "string") throw new Error(`${flag}: expected a string, got ${typeof value}`);
  return value;
}
