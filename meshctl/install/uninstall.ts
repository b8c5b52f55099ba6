/**
 * `uninstall` (seed 002 "uninstall"; istioctl's `uninstall`): removes one revision's objects (found by
 * the ownership labels of render.ts, `mesh.io/rev=<revision>`), or with `--purge` every object meshctl
 * installed, of every revision, base included (CRDs, whose deletion removes their objects, and the
 * namespace mesh-system). As istioctl, one of `--revision`, `--filename` or `--purge` is required.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { commandOrchClient } from "../orch/orch_client.ts";
import { deleteObject, describe, ownedObjects } from "./apply.ts";
import { type KubeObject, REV_LABEL, revisionLabel } from "./render.ts";
import { addSpecFlags, confirmed, specFlags, specFromFlags } from "./spec_flags.ts";

/** Deletion order: webhooks first (nothing calls a meshd being removed), cluster-wide base last. */
const LAST = ["CustomResourceDefinition", "Namespace"];
const FIRST = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"];

/** Orders objects for deletion. */
export function deletionOrder(objects: KubeObject[]): KubeObject[] {
  const rank = (o: KubeObject) =>
    FIRST.includes(o.kind) ? 0 : LAST.includes(o.kind) ? 2 + LAST.indexOf(o.kind) : 1;
  return [...objects].sort((a, b) => rank(a) - rank(b));
}

/** Builds `uninstall`. */
export function uninstallCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("uninstall").description(
    "Remove the mesh: one revision, or everything with --purge",
  )
    .option("--dry-run", "list what would be removed; change nothing")
    .option(
      "--purge",
      "remove every object meshctl installed, of all revisions, CRDs and mesh-system included",
    )
    .option("-y, --skip-confirmation", "do not ask; assume yes")
    .option("-v, --verbose", "name each object removed");
  addSpecFlags(cmd);
  cmd.action(async (opts, command) => {
    const flags = specFlags(command);
    if (!opts.purge && flags.revision === "" && flags.filename.length === 0) {
      throw new Error("at least one of --revision (or -r), --filename (or -f) or --purge must be given");
    }
    const spec = opts.purge ? undefined : await specFromFlags(flags, io);
    const selector = spec ? `${REV_LABEL}=${revisionLabel(spec.revision)}` : "";
    const orch = commandOrchClient(command);
    try {
      const targets = deletionOrder(await ownedObjects(orch.api, selector));
      const what = spec
        ? `revision ${revisionLabel(spec.revision)}`
        : "every revision and the base (--purge)";
      if (targets.length === 0) {
        io.stdout(`nothing to remove for ${what}\n`);
        return;
      }
      if (opts.dryRun) {
        for (const o of targets) io.stdout(`would remove ${describe(o)}\n`);
        io.stdout("dry run: nothing was changed\n");
        return;
      }
      if (
        !confirmed(
          `All mesh resources of ${what} will be removed from the cluster. Proceed?`,
          opts.skipConfirmation,
          io,
        )
      ) {
        io.stderr("cancelled\n");
        io.setExitCode(1);
        return;
      }
      for (const o of targets) {
        const removed = await deleteObject(orch.api, o);
        if (removed && opts.verbose) {
          io.stdout(`  Removed ${o.kind}:${o.metadata.namespace ?? ""}:${o.metadata.name}.\n`);
        }
      }
      io.stdout(`✔ Uninstall complete (${targets.length} objects of ${what})\n`);
    } finally {
      await orch.close();
    }
  });
  return cmd;
}
