/**
 * `install` (alias `apply`), `upgrade`, `manifest install|generate|translate` and `uninstall` (seed
 * 002 "install", "manifest", "uninstall"; istioctl's `install`, `manifest`, `uninstall`): the manifests
 * of deploy/kubernetes for a profile, `-f` files and `--set`s, applied through the orchestrator
 * client (meshctl/orch), waited for and pruned, as istioctl's installer.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { stringify } from "yaml";
import { parseGoDuration } from "../../shared/internal/cli/go_values.ts";
import type { CliIo } from "../cli_io.ts";
import { commandOrchClient } from "../orch/orch_client.ts";
import { applyObject, deleteObject, describe, type KubeApi, objectPath, staleObjects } from "./apply.ts";
import { manifestYaml, render, type RenderedComponent, revisionLabel } from "./render.ts";
import { addSpecFlags, confirmed, specFlags, specFromFlags } from "./spec_flags.ts";
import { waitForComponent } from "./readiness.ts";
import { COMPONENT_TITLES } from "./titles.ts";
import { uninstallCommand } from "./uninstall.ts";

function durationFlag(text: string): number {
  const r = parseGoDuration(text);
  if (!r.ok) throw new Error(`--readiness-timeout: "${text}" ${r.reason}`);
  return r.value;
}

function installLike(name: string, description: string, io: CliIo): CommandUnknownOpts {
  const cmd = new Command(name).description(description)
    .option("--dry-run", "print what would be applied; change nothing")
    .option("-y, --skip-confirmation", "do not ask; assume yes")
    .addOption(
      new Option(
        "--readiness-timeout <duration>",
        "longest wait for each component's Deployments to be ready",
      )
        .argParser(durationFlag).default(300_000, "5m0s"),
    )
    .option("--verify", "check every installed object and Deployment after the install");
  addSpecFlags(cmd);
  cmd.action(async (opts, command) => {
    const spec = await specFromFlags(specFlags(command), io);
    const components = render(spec);
    const rev = revisionLabel(spec.revision);
    // `manifest --dry-run install` sets the group's flag: it counts as install's own.
    if (opts.dryRun || (command.optsWithGlobals() as { dryRun?: boolean }).dryRun) {
      for (const c of components) {
        for (const o of c.objects) io.stdout(`would apply ${describe(o)} (${COMPONENT_TITLES[c.name]})\n`);
      }
      io.stdout("dry run: nothing was changed\n");
      return;
    }
    if (
      !confirmed(
        `This will install the ${spec.profile} profile (revision ${rev}) into the cluster. Proceed?`,
        opts.skipConfirmation,
        io,
      )
    ) {
      io.stderr("cancelled\n");
      io.setExitCode(1);
      return;
    }
    const orch = commandOrchClient(command);
    try {
      await installComponents(orch.api, components, rev, opts.readinessTimeout, io);
      if (opts.verify) await verify(orch.api, components, io);
    } finally {
      await orch.close();
    }
  });
  return cmd;
}

/**
 * Applies each component in order, waits for its Deployments, then prunes what this revision
 * installed before and no longer renders.
 *
 * @throws Error naming the object the API refused, or the component not ready in time
 */
export async function installComponents(
  api: KubeApi,
  components: RenderedComponent[],
  rev: string,
  readinessMs: number,
  io: CliIo,
): Promise<void> {
  for (const c of components) {
    for (const o of c.objects) await applyObject(api, o);
    await waitForComponent(api, c, readinessMs, io);
    io.stdout(`✔ ${COMPONENT_TITLES[c.name]} installed\n`);
  }
  const keep = components.flatMap((c) => c.objects);
  for (const o of await staleObjects(api, rev, keep)) {
    await deleteObject(api, o);
    io.stdout(
      `  Removed ${o.kind}:${o.metadata.namespace ?? ""}:${o.metadata.name} (no longer in the manifest).\n`,
    );
  }
  io.stdout("✔ Installation complete\n");
}

async function verify(api: KubeApi, components: RenderedComponent[], io: CliIo): Promise<void> {
  const missing: string[] = [];
  let n = 0;
  for (const o of components.flatMap((c) => c.objects)) {
    n++;
    await api.json("GET", objectPath(o)).catch((e) =>
      missing.push(`${describe(o)}: ${(e as Error).message}`)
    );
  }
  if (missing.length > 0) throw new Error(`verification failed:\n  ${missing.join("\n  ")}`);
  io.stdout(`✔ Verified ${n} objects of ${components.length} components\n`);
}

function manifestCommand(io: CliIo): CommandUnknownOpts {
  const group = new Command("manifest").description("Generate, translate or install the mesh's manifests")
    .option("--dry-run", "print only, change nothing");
  const generate = new Command("generate").description("Print the install manifest (YAML)")
    .option(
      "--cluster-specific",
      "detect settings from the current cluster (no effect: nothing is cluster-specific)",
    );
  addSpecFlags(generate);
  generate.action(async (_opts, command) => {
    io.stdout(manifestYaml(render(await specFromFlags(specFlags(command), io))));
  });
  const translate = new Command("translate")
    .description("Print the resolved install resource (profile applied); partial: there are no chart values")
    .option("-o, --output <file>", "write to this file instead of standard output");
  addSpecFlags(translate, true);
  translate.action(async (opts, command) => {
    const spec = await specFromFlags(specFlags(command), io);
    const doc = stringify({ apiVersion: "install.mesh.io/v1alpha1", kind: "MeshOperator", spec });
    if (opts.output) await Deno.writeTextFile(opts.output, doc);
    else io.stdout(doc);
  });
  group.addCommand(generate);
  group.addCommand(translate);
  group.addCommand(
    installLike("install", "Generate the install manifest and apply it (as install)", io).alias("apply"),
  );
  return group;
}

/** The install commands to add to the root: install, upgrade, manifest, uninstall. */
export function installCommands(io: CliIo): CommandUnknownOpts[] {
  return [
    installLike("install", "Generate the install manifest for a profile and apply it to the cluster", io)
      .alias(
        "apply",
      ),
    installLike("upgrade", "Upgrade the control plane in place (the same as install)", io),
    manifestCommand(io),
    uninstallCommand(io),
  ];
}
