/**
 * Runs a bench's child script against one checkout: the script is written to a temporary directory
 * (never into the checkouts, which may be others' worktrees) and run with the checkout as its working
 * directory and its deno.json, so that it imports that checkout's modules through `Deno.cwd()`.
 *
 * @module
 */

/** A child script, written once and run against any number of checkouts. */
export class ChildScript {
  private constructor(readonly dir: string, readonly file: string) {}

  /** Writes `source` (JavaScript) to a new temporary directory. */
  static async write(source: string): Promise<ChildScript> {
    const dir = await Deno.makeTempDir({ prefix: "agent_memory_child_" });
    const file = `${dir}/child.js`;
    await Deno.writeTextFile(file, source);
    return new ChildScript(dir, file);
  }

  /**
   * Runs the script in `tree` with `v8Flags` and `args`; returns the JSON of its last stdout line.
   * Throws with the child's stderr when it fails.
   */
  async run(tree: string, v8Flags: string, args: string[]): Promise<Record<string, number>> {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `--v8-flags=${v8Flags}`, `--config=${tree}/deno.json`, this.file, ...args],
      cwd: tree,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) throw new Error(`${tree}: ${new TextDecoder().decode(out.stderr)}`);
    return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
  }

  /** Removes the temporary directory. */
  async remove(): Promise<void> {
    await Deno.remove(this.dir, { recursive: true });
  }
}
