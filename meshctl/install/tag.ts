/**
 * `tag set|generate|list|remove` (seed 002 "tag"; istioctl's `tag`): revision tags as webhook
 * configurations (tag_webhooks.ts), read and written through the orchestrator client.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { stringify } from "yaml";
import type { CliIo } from "../cli_io.ts";
import { commandOrchClient } from "../orch/orch_client.ts";
import { applyObject, collectionPath, deleteObject, type KubeApi } from "./apply.ts";
import { COMPONENT_LABEL, type KubeObject, REV_LABEL } from "./render.ts";
import {
  deactivationPatch,
  DEFAULT_INJECTOR,
  defaultValidator,
  TAG_LABEL,
  tagInjector,
  tagWebhookName,
} from "./tag_webhooks.ts";
import { confirmed } from "./spec_flags.ts";

type Json = Record<string, unknown>;
const MWC = collectionPath("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration");
const VWC = collectionPath("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration");
const MWC_KIND = { apiVersion: "admissionregistration.k8s.io/v1", kind: "MutatingWebhookConfiguration" };
const VWC_KIND = { apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration" };
const labelsOf = (o: Json): Record<string, string> =>
  ((o.metadata as Json)?.labels ?? {}) as Record<string, string>;
const nameOf = (o: Json): string => String((o.metadata as Json)?.name);

async function list(api: KubeApi, path: string, labelSelector: string): Promise<Json[]> {
  return (await api.json<{ items?: Json[] }>("GET", path, { query: { labelSelector } })).items ?? [];
}

/** The tags found in the cluster: tag, revision, webhook, namespaces labelled with the tag. */
export interface TagInfo {
  tag: string;
  revision: string;
  webhook: string;
  namespaces: string[];
}

/** Every tag and the namespaces that reference it. */
export async function listTags(api: KubeApi): Promise<TagInfo[]> {
  const out: TagInfo[] = [];
  for (const w of await list(api, MWC, TAG_LABEL)) {
    const tag = labelsOf(w)[TAG_LABEL];
    const ns = await list(api, "/api/v1/namespaces", `${REV_LABEL}=${tag}`);
    out.push({ tag, revision: labelsOf(w)[REV_LABEL] ?? "", webhook: nameOf(w), namespaces: ns.map(nameOf) });
  }
  return out.sort((a, b) => a.tag.localeCompare(b.tag));
}

/**
 * The objects `tag set` writes, after the seed's rules: the revision must exist, the tag may not name
 * a revision, and repointing an existing tag needs `overwrite`.
 *
 * @throws Error saying which rule refused
 */
export async function tagObjects(
  api: KubeApi,
  tag: string,
  o: { revision: string; overwrite: boolean; webhookName: string },
): Promise<KubeObject[]> {
  const revision = o.revision || "default";
  const injectors = await list(api, MWC, `${REV_LABEL},!${TAG_LABEL}`);
  // The tag "default" takes over from the default revision's own injector (deactivated), as istioctl.
  if (tag !== "default" && injectors.some((w) => labelsOf(w)[REV_LABEL] === tag)) {
    throw new Error(
      `cannot create revision tag "${tag}": found an existing control plane revision with the same name`,
    );
  }
  const injector = injectors.find((w) => labelsOf(w)[REV_LABEL] === revision);
  if (!injector) {
    const known = injectors.map((w) => labelsOf(w)[REV_LABEL]).join(", ") || "none";
    throw new Error(
      `cannot find a MutatingWebhookConfiguration of revision "${revision}" (installed: ${known})`,
    );
  }
  const existing = (await listTags(api)).find((t) => t.tag === tag);
  if (existing && existing.revision !== revision && !o.overwrite) {
    throw new Error(
      `revision tag "${tag}" already points to revision "${existing.revision}" and --overwrite is false`,
    );
  }
  const objects = [tagInjector(tag, revision, injector, o.webhookName || tagWebhookName(tag))];
  if (tag === "default") objects.push(defaultValidator(revision, injector));
  return objects;
}

function tagFlags(cmd: Command): Command {
  return cmd
    .option("-r, --revision <revision>", "the control plane revision the tag points to", "")
    .option("--overwrite", "repoint an existing tag")
    .option(
      "--webhook-name <name>",
      "name of the tag's webhook configuration (default mesh-revision-tag-<tag>)",
      "",
    )
    .option(
      "--auto-inject-namespaces",
      "inject every namespace by default (no effect yet: tag webhooks select only labelled namespaces)",
    )
    .option("-d, --manifests <dir>", "directory of charts (no effect: the manifests are built in)")
    .option("-y, --skip-confirmation", "do not ask; assume yes");
}

function readTagFlags(
  command: CommandUnknownOpts,
): { revision: string; overwrite: boolean; webhookName: string } {
  const o: Record<string, unknown> = command.opts();
  return {
    revision: typeof o.revision === "string" ? o.revision : "",
    overwrite: o.overwrite === true,
    webhookName: typeof o.webhookName === "string" ? o.webhookName : "",
  };
}

/** Builds `tag` and its subcommands. */
export function tagCommand(io: CliIo): CommandUnknownOpts {
  const group = new Command("tag").description(
    "Manage revision tags: mutable aliases of control plane revisions",
  );
  const withApi = async (command: CommandUnknownOpts, f: (api: KubeApi) => Promise<void>): Promise<void> => {
    const orch = commandOrchClient(command);
    try {
      await f(orch.api);
    } finally {
      await orch.close();
    }
  };
  const set = tagFlags(new Command("set").description("Create or repoint a revision tag")).argument(
    "<revision-tag>",
  );
  set.action((tag, _o, command) =>
    withApi(command, async (api) => {
      const objects = await tagObjects(api, tag, readTagFlags(command));
      for (const o of objects) await applyObject(api, o);
      if (tag === "default") await deactivateDefaultInjector(api, io);
      io.stdout(
        `Revision tag "${tag}" created, pointing to revision "${
          readTagFlags(command).revision || "default"
        }"\n`,
      );
    })
  );
  const generate = tagFlags(new Command("generate").description("Print the tag's webhook configurations"))
    .argument("<revision-tag>");
  generate.action((tag, _o, command) =>
    withApi(command, async (api) => {
      io.stdout((await tagObjects(api, tag, readTagFlags(command))).map((o) => stringify(o)).join("---\n"));
    })
  );
  const listCmd = new Command("list").alias("show").description("List revision tags")
    .addOption(
      new Option("-o, --output <format>", "table, json or yaml").choices(["table", "json", "yaml"] as const)
        .default("table" as const),
    );
  listCmd.action((opts, command) =>
    withApi(command, async (api) => {
      const tags = await listTags(api);
      if (opts.output === "json") return io.stdout(JSON.stringify(tags, null, 2) + "\n");
      if (opts.output === "yaml") return io.stdout(stringify(tags));
      const rows = [
        ["TAG", "REVISION", "NAMESPACES"],
        ...tags.map((t) => [t.tag, t.revision, t.namespaces.join(",")]),
      ];
      const w = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
      for (const r of rows) io.stdout(r.map((c, i) => c.padEnd(w[i])).join("   ").trimEnd() + "\n");
    })
  );
  const remove = new Command("remove").alias("delete").description("Remove a revision tag").argument(
    "<revision-tag>",
  )
    .option("-y, --skip-confirmation", "do not ask; assume yes");
  remove.action((tag, opts, command) =>
    withApi(command, async (api) => {
      const info = (await listTags(api)).find((t) => t.tag === tag);
      if (!info) throw new Error(`revision tag "${tag}" does not exist`);
      if (info.namespaces.length > 0) {
        const q = `Namespaces ${
          info.namespaces.join(", ")
        } reference tag "${tag}"; removing it stops their injection. Proceed?`;
        if (!confirmed(q, opts.skipConfirmation, io)) throw new Error(`revision tag "${tag}" kept`);
      }
      for (const w of await list(api, MWC, `${TAG_LABEL}=${tag}`)) {
        await deleteObject(api, { ...w, ...MWC_KIND } as KubeObject);
      }
      if (tag === "default") {
        for (const v of await list(api, VWC, `${TAG_LABEL}=default`)) {
          await deleteObject(api, { ...v, ...VWC_KIND } as KubeObject);
        }
      }
      io.stdout(`Revision tag "${tag}" removed\n`);
    })
  );
  for (const c of [set, generate, listCmd, remove]) group.addCommand(c);
  return group;
}

async function deactivateDefaultInjector(api: KubeApi, io: CliIo): Promise<void> {
  const injectors = await list(api, MWC, `${COMPONENT_LABEL},!${TAG_LABEL}`);
  const d = injectors.find((w) => nameOf(w) === DEFAULT_INJECTOR);
  if (!d) return;
  await api.json("PATCH", `${MWC}/${DEFAULT_INJECTOR}`, {
    body: deactivationPatch(d),
    contentType: "application/merge-patch+json",
  });
  io.stdout(`Deactivated ${DEFAULT_INJECTOR}: the tag "default" now decides default injection\n`);
}
