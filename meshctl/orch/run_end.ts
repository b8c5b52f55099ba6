/**
 * What a meshctl run must close when it ends (port-forwards, API clients, temporary files), by the
 * run's root command; `runMeshctl` calls {@link endRun} after the action, also a failed one.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";

const pending = new WeakMap<CommandUnknownOpts, (() => Promise<void>)[]>();

/** Registers `close` to run when the run of `program` (the root command) ends. */
export function onRunEnd(program: CommandUnknownOpts, close: () => Promise<void>): void {
  pending.set(program, [...(pending.get(program) ?? []), close]);
}

/** Runs what the run of `program` registered, last first; errors are dropped (the run already ended). */
export async function endRun(program: CommandUnknownOpts): Promise<void> {
  const all = pending.get(program) ?? [];
  pending.delete(program);
  for (const close of all.reverse()) await close().catch(() => {});
}
