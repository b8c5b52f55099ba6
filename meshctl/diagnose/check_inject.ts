/**
 * `meshctl x check-inject [<type>/]<name>[.<namespace>]` and `-l <labels>` (meshctl seed,
 * "experimental"; istioctl's `x check-inject`): for each sidecar injector webhook configuration in the
 * cluster, whether it would inject the pod (or a pod with the given labels), and why. A webhook entry
 * applies when its namespaceSelector matches the namespace's labels and its objectSelector the pod's
 * (shared/internal/kube/label_selector.ts, as the API server decides); the injector then applies
 * Istio's rules (shared/internal/inject/injection_policy.ts, the code meshd's webhook runs).
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { table } from "../output.ts";
import { commandOrchClient } from "../orch/orch_client.ts";
import type { ApiClient } from "../../shared/internal/kube/api_client.ts";
import { labelSelectorMatches } from "../../shared/internal/kube/label_selector.ts";
import { injectionDecision, REVISION_LABELS } from "../../shared/internal/inject/injection_policy.ts";
import { labelsOf, type Obj, obj, parseLabels, show } from "./kube_json.ts";

/** The API path of each kind whose pod (template) is checked, by the names kubectl accepts. */
const PATHS: Readonly<Record<string, string>> = {
  pod: "/api/v1/namespaces/NS/pods/NAME",
  po: "/api/v1/namespaces/NS/pods/NAME",
  deployment: "/apis/apps/v1/namespaces/NS/deployments/NAME",
  deploy: "/apis/apps/v1/namespaces/NS/deployments/NAME",
  statefulset: "/apis/apps/v1/namespaces/NS/statefulsets/NAME",
  sts: "/apis/apps/v1/namespaces/NS/statefulsets/NAME",
  daemonset: "/apis/apps/v1/namespaces/NS/daemonsets/NAME",
  ds: "/apis/apps/v1/namespaces/NS/daemonsets/NAME",
  replicaset: "/apis/apps/v1/namespaces/NS/replicasets/NAME",
  rs: "/apis/apps/v1/namespaces/NS/replicasets/NAME",
};

/** One webhook configuration's answer. */
export interface InjectionCheck {
  webhook: string;
  revision: string;
  injected: boolean;
  reason: string;
}

/** Whether a webhook entry is called for pod creation. */
function coversPods(hook: Obj): boolean {
  const rules = Array.isArray(hook.rules) ? hook.rules.map(obj) : [];
  return rules.some((r) =>
    Array.isArray(r.resources) && r.resources.some((x) => x === "pods" || x === "*") &&
    (!Array.isArray(r.operations) || r.operations.some((o) => o === "CREATE" || o === "*"))
  );
}

/**
 * Checks a pod (its metadata and spec, or a template's) against the injector webhook configurations:
 * those with an entry named `*sidecar-injector*` that is called for pod creation.
 *
 * @param configs MutatingWebhookConfiguration objects as the API returns them
 * @returns one answer per injector configuration, in the order given
 */
export function checkInjection(
  pod: { metadata: Obj; spec: Obj },
  namespace: string,
  namespaceLabels: Record<string, string>,
  configs: unknown[],
): InjectionCheck[] {
  const podLabels = labelsOf(pod.metadata, "labels");
  const out: InjectionCheck[] = [];
  for (const c of configs.map(obj)) {
    const hooks = (Array.isArray(c.webhooks) ? c.webhooks.map(obj) : []).filter(coversPods);
    if (!hooks.some((h) => String(h.name ?? "").includes("sidecar-injector"))) continue;
    const meta = obj(c.metadata);
    const configLabels = labelsOf(meta, "labels");
    const revision = REVISION_LABELS.map((k) => configLabels[k]).find((v) => v !== undefined) ?? "default";
    const matched = hooks.find((h) =>
      labelSelectorMatches(h.namespaceSelector, namespaceLabels) &&
      labelSelectorMatches(h.objectSelector, podLabels)
    );
    const webhook = String(meta.name ?? "");
    if (!matched) {
      out.push({
        webhook,
        revision,
        injected: false,
        reason: `no webhook selects namespace ${namespace} (labels: ${show(namespaceLabels)}) with the pod ` +
          `(labels: ${show(podLabels)})`,
      });
      continue;
    }
    let decision: { inject: boolean; reason: string };
    try {
      decision = injectionDecision(pod, { namespace, namespaceLabels, revision, policy: "enabled" });
    } catch (e) {
      decision = { inject: false, reason: `the injector refuses the pod: ${(e as Error).message}` };
    }
    out.push({ webhook, revision, injected: decision.inject, reason: `${matched.name}: ${decision.reason}` });
  }
  return out;
}

/**
 * Parses `[<type>/]<name>[.<namespace>]`.
 *
 * @throws Error naming the target when the type is not one of {@link PATHS} or the name is empty
 */
export function parseTarget(target: string, fallbackNamespace: string): { path: string; namespace: string } {
  const slash = target.indexOf("/");
  const kind = slash < 0 ? "pod" : target.slice(0, slash).toLowerCase();
  const rest = slash < 0 ? target : target.slice(slash + 1);
  const dot = rest.indexOf(".");
  const name = dot < 0 ? rest : rest.slice(0, dot);
  const namespace = dot < 0 ? fallbackNamespace : rest.slice(dot + 1);
  if (!PATHS[kind]) {
    throw new Error(
      `check-inject: unsupported type "${kind}" in ${target}; use pod, deployment, statefulset, daemonset or replicaset`,
    );
  }
  if (!name) throw new Error(`check-inject: ${target}: no name`);
  const path = PATHS[kind].replace("NS", encodeURIComponent(namespace)).replace(
    "NAME",
    encodeURIComponent(name),
  );
  return { path, namespace };
}

async function podOf(api: ApiClient, path: string): Promise<{ metadata: Obj; spec: Obj }> {
  const o = obj(await api.json("GET", path));
  if (o.kind === "Pod") return { metadata: obj(o.metadata), spec: obj(o.spec) };
  const template = obj(obj(o.spec).template);
  return { metadata: obj(template.metadata), spec: obj(template.spec) };
}

/** Builds `check-inject`. */
export function checkInjectCommand(io: CliIo): CommandUnknownOpts {
  return new Command("check-inject")
    .description(
      "Check whether a pod (or a workload's pod template) will be injected with the mesh proxy by each " +
        "sidecar injector webhook, and why",
    )
    .argument(
      "[target]",
      "[<type>/]<name>[.<namespace>]; type pod (default), deployment, statefulset, daemonset, replicaset",
    )
    .option("-l, --labels <labels>", "check a pod with these labels (k=v,k2=v2) in -n's namespace instead")
    .action(async (target, opts, command) => {
      const orch = commandOrchClient(command);
      try {
        let pod: { metadata: Obj; spec: Obj };
        let namespace = orch.namespace;
        if (opts.labels !== undefined) {
          if (target) throw new Error("check-inject: give a target or --labels, not both");
          pod = { metadata: { labels: parseLabels("--labels", opts.labels) }, spec: {} };
        } else {
          if (!target) {
            throw new Error("check-inject: give a pod ([<type>/]<name>[.<namespace>]) or --labels");
          }
          const t = parseTarget(target, orch.namespace);
          namespace = t.namespace;
          pod = await podOf(orch.api, t.path);
        }
        const ns = obj(await orch.api.json("GET", `/api/v1/namespaces/${encodeURIComponent(namespace)}`));
        const configs = await orch.api.json<{ items?: unknown[] }>(
          "GET",
          "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        );
        const checks = checkInjection(pod, namespace, labelsOf(ns.metadata, "labels"), configs.items ?? []);
        if (checks.length === 0) {
          throw new Error(
            `no sidecar injector webhook configuration in ${orch.description}: is the mesh installed?`,
          );
        }
        io.stdout(table(
          ["WEBHOOK", "REVISION", "INJECTED", "REASON"],
          checks.map((c) => [c.webhook, c.revision, c.injected ? "\u2714" : "\u2718", c.reason]),
        ));
      } finally {
        await orch.close();
      }
    });
}
