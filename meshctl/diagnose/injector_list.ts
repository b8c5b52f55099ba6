/**
 * `meshctl x injector list` (meshctl seed, "experimental"; istioctl's `x injector list`): the sidecar
 * injector webhook configurations with the namespaces each one injects, then the namespaces whose
 * pods carry the proxy, with the revisions and proxy images found there.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { table } from "../output.ts";
import { commandOrchClient } from "../orch/orch_client.ts";
import { labelSelectorMatches } from "../../shared/internal/kube/label_selector.ts";
import { REVISION_LABELS } from "../../shared/internal/inject/injection_policy.ts";
import { PROXY_CONTAINERS } from "../analyze/live/kube_analyzers.ts";
import { labelsOf, type Obj, obj, objs } from "./kube_json.ts";

/** One injector configuration: the namespaces it injects and its revision. */
export interface InjectorHook {
  name: string;
  revision: string;
  namespaces: string[];
}

/** One namespace with proxied pods: their revisions and proxy images. */
export interface ProxiedNamespace {
  namespace: string;
  revisions: string[];
  images: string[];
}

function revisionOf(labels: Record<string, string>): string | undefined {
  return REVISION_LABELS.map((k) => labels[k]).find((v) => v !== undefined);
}

/**
 * The injector hooks (webhooks named `*sidecar-injector*`) and the namespaces they inject by default:
 * a hook's namespaceSelector matches the namespace and its objectSelector a pod that says nothing (so
 * the hook for pods labelled `sidecar.mesh.io/inject=true` does not list every namespace).
 */
export function injectorHooks(configs: Obj[], namespaces: Obj[]): InjectorHook[] {
  const out: InjectorHook[] = [];
  for (const c of configs) {
    const hooks = objs(c.webhooks).filter((h) => String(h.name ?? "").includes("sidecar-injector"));
    if (hooks.length === 0) continue;
    const selected = namespaces.filter((n) =>
      hooks.some((h) =>
        labelSelectorMatches(h.namespaceSelector, labelsOf(n.metadata, "labels")) &&
        labelSelectorMatches(h.objectSelector, {})
      )
    ).map((n) => String(obj(n.metadata).name));
    out.push({
      name: String(obj(c.metadata).name),
      revision: revisionOf(labelsOf(c.metadata, "labels")) ?? "default",
      namespaces: selected.sort(),
    });
  }
  return out;
}

/** The namespaces whose pods carry the proxy container, sorted. */
export function proxiedNamespaces(pods: Obj[]): ProxiedNamespace[] {
  const by = new Map<string, { revisions: Set<string>; images: Set<string> }>();
  for (const p of pods) {
    const spec = obj(p.spec);
    const proxies = [...objs(spec.initContainers), ...objs(spec.containers)].filter((c) =>
      PROXY_CONTAINERS.includes(String(c.name))
    );
    if (proxies.length === 0) continue;
    const ns = String(obj(p.metadata).namespace ?? "default");
    const entry = by.get(ns) ?? { revisions: new Set(), images: new Set() };
    entry.revisions.add(revisionOf(labelsOf(p.metadata, "labels")) ?? "default");
    for (const c of proxies) entry.images.add(String(c.image ?? "unknown"));
    by.set(ns, entry);
  }
  return [...by.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([namespace, e]) => ({
    namespace,
    revisions: [...e.revisions].sort(),
    images: [...e.images].sort(),
  }));
}

/** Builds `injector list`. */
export function injectorListCommand(io: CliIo): CommandUnknownOpts {
  return new Command("list")
    .description("List the sidecar injector webhooks, the namespaces they inject, and the proxies running")
    .action(async (_opts, command) => {
      const orch = commandOrchClient(command);
      try {
        const [configs, namespaces, pods] = await Promise.all([
          orch.api.json<{ items?: unknown[] }>(
            "GET",
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
          ),
          orch.api.json<{ items?: unknown[] }>("GET", "/api/v1/namespaces"),
          orch.api.json<{ items?: unknown[] }>("GET", "/api/v1/pods"),
        ]);
        const hooks = injectorHooks(objs(configs.items), objs(namespaces.items));
        io.stdout(table(
          ["NAMESPACES", "INJECTOR-HOOK", "MESH-REVISION"],
          hooks.map((h) => [h.namespaces.join(",") || "(none)", h.name, h.revision]),
        ));
        const proxied = proxiedNamespaces(objs(pods.items));
        io.stdout(
          "\n" + table(
            ["NAMESPACE", "MESH-REVISION", "POD-IMAGES"],
            proxied.map((n) => [n.namespace, n.revisions.join(","), n.images.join(",")]),
          ),
        );
      } finally {
        await orch.close();
      }
    });
}
