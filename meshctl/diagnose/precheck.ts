/**
 * `meshctl x precheck` (meshctl seed, "experimental"; istioctl's `x precheck`): inspects a cluster
 * before `install` or an upgrade and prints analysis messages in `analyze`'s formats (log, json,
 * yaml), exiting 79 (as analyze) when one is an Error. Checks:
 *
 * - the Kubernetes version against the minimum (1.29: the oldest Kubernetes Istio 1.26 supports,
 *   istio.io "Supported Releases"), IST0142 UnsupportedKubernetesVersion;
 * - unless `--skip-controlplane`: whether meshd of `--revision` already runs in the mesh namespace
 *   (MESH0003, Info: install upgrades it in place), and whether Istio's own injector webhooks exist
 *   (MESH0004, Warning: two injectors would both inject pods);
 * - pods with the proxy whose revision no injector webhook serves (MESH0005, Warning).
 *
 * Not checked (partial): the caller's RBAC permissions (istioctl's IST0141 through
 * SelfSubjectAccessReview, which the test API server does not serve); `--from-version` has no
 * version-specific upgrade notes and warns that it has no effect.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { commandOrchClient } from "../orch/orch_client.ts";
import type { AnalysisMessage } from "../analyze/analyzers.ts";
import { atLeast, type MessageType, parseLevel } from "../analyze/messages.ts";
import { formatMessages, OUTPUT_FORMATS } from "../analyze/report.ts";
import { EXIT_ANALYZER_FOUND_ISSUES } from "../analyze/command.ts";
import { REVISION_LABELS } from "../../shared/internal/inject/injection_policy.ts";
import { PROXY_CONTAINERS } from "../analyze/live/kube_analyzers.ts";
import { labelsOf, type Obj, obj, objs } from "./kube_json.ts";

/** The oldest Kubernetes minor version supported (Istio 1.26's). */
export const MIN_KUBERNETES_MINOR = 29;

/** The message types of precheck. */
export const PRECHECK_MESSAGES = {
  UnsupportedKubernetesVersion: {
    code: "IST0142",
    name: "UnsupportedKubernetesVersion",
    level: "Error",
    template: "The Kubernetes Version %q is lower than the minimum version: %s",
  },
  ControlPlaneInstalled: {
    code: "MESH0003",
    name: "ControlPlaneInstalled",
    level: "Info",
    template: "meshd revision %s is already installed in %s: install upgrades it in place",
  },
  ForeignInjector: {
    code: "MESH0004",
    name: "ForeignInjector",
    level: "Warning",
    template: "the injector webhook configuration %s (Istio's) exists: two injectors would both inject pods",
  },
  ProxyWithoutControlPlane: {
    code: "MESH0005",
    name: "ProxyWithoutControlPlane",
    level: "Warning",
    template: "pod %s runs the proxy of revision %s, which no injector webhook serves",
  },
} as const satisfies Record<string, MessageType>;

/** What the checks read. */
export interface PrecheckInput {
  version: { major?: string; minor?: string; gitVersion?: string };
  meshNamespace: string;
  revision: string;
  deployments: Obj[];
  webhookConfigs: Obj[];
  pods: Obj[];
  skipControlPlane: boolean;
}

function revisionOf(labels: Record<string, string>): string {
  return REVISION_LABELS.map((k) => labels[k]).find((v) => v !== undefined) ?? "default";
}

/** Runs the checks. */
export function precheck(i: PrecheckInput): AnalysisMessage[] {
  const out: AnalysisMessage[] = [];
  const minor = Number.parseInt(String(i.version.minor ?? "").replace(/\D.*$/, ""), 10);
  if (i.version.major === "1" && Number.isFinite(minor) && minor < MIN_KUBERNETES_MINOR) {
    out.push({
      type: PRECHECK_MESSAGES.UnsupportedKubernetesVersion,
      params: [i.version.gitVersion ?? `${i.version.major}.${i.version.minor}`, `1.${MIN_KUBERNETES_MINOR}`],
    });
  }
  if (!i.skipControlPlane) {
    for (const d of i.deployments) {
      const meta = obj(d.metadata);
      const labels = labelsOf(meta, "labels");
      if (meta.namespace !== i.meshNamespace || (labels.app ?? meta.name) !== "meshd") continue;
      if (revisionOf(labels) !== i.revision) continue;
      out.push({
        type: PRECHECK_MESSAGES.ControlPlaneInstalled,
        resource: { kind: "Deployment", namespace: i.meshNamespace, name: String(meta.name) },
        params: [i.revision, i.meshNamespace],
      });
    }
    for (const c of i.webhookConfigs) {
      const name = String(obj(c.metadata).name);
      if (name.startsWith("istio-sidecar-injector") || name.startsWith("istio-revision-tag-")) {
        out.push({
          type: PRECHECK_MESSAGES.ForeignInjector,
          resource: { kind: "MutatingWebhookConfiguration", namespace: "", name },
          params: [name],
        });
      }
    }
  }
  const served = new Set(
    i.webhookConfigs.filter((c) =>
      objs(c.webhooks).some((h) => String(h.name ?? "").includes("sidecar-injector"))
    ).map((c) => revisionOf(labelsOf(c.metadata, "labels"))),
  );
  for (const p of i.pods) {
    const spec = obj(p.spec);
    const proxied = [...objs(spec.initContainers), ...objs(spec.containers)].some((c) =>
      PROXY_CONTAINERS.includes(String(c.name))
    );
    if (!proxied) continue;
    const rev = revisionOf(labelsOf(p.metadata, "labels"));
    if (served.has(rev)) continue;
    const meta = obj(p.metadata);
    out.push({
      type: PRECHECK_MESSAGES.ProxyWithoutControlPlane,
      resource: { kind: "Pod", namespace: String(meta.namespace), name: String(meta.name) },
      params: [`${String(meta.name)}.${String(meta.namespace)}`, rev],
    });
  }
  return out;
}

/** Builds `precheck`. */
export function precheckCommand(io: CliIo): CommandUnknownOpts {
  return new Command("precheck")
    .description(
      "Check a cluster before installing or upgrading the mesh: Kubernetes version, control planes already " +
        "there, proxies no control plane serves (not checked: RBAC permissions)",
    )
    .option("-f, --from-version <version>", "version upgraded from (no effect: no version-specific checks)")
    .addOption(
      new Option("-o, --output <format>", "log, json or yaml").choices(OUTPUT_FORMATS).default("log"),
    )
    .option("--output-threshold <level>", "lowest severity shown: Info, Warning, Error", "Warning")
    .option("-r, --revision <revision>", "revision to check for", "default")
    .option("--skip-controlplane", "skip the control plane checks")
    .action(async (opts, command) => {
      const threshold = parseLevel("--output-threshold", opts.outputThreshold);
      if (opts.fromVersion !== undefined) io.stderr("warning: --from-version has no effect\n");
      const orch = commandOrchClient(command);
      try {
        const list = async (path: string) =>
          objs((await orch.api.json<{ items?: unknown[] }>("GET", path)).items);
        const [version, deployments, webhookConfigs, pods] = await Promise.all([
          orch.api.json<PrecheckInput["version"]>("GET", "/version"),
          list(`/apis/apps/v1/namespaces/${encodeURIComponent(orch.meshNamespace)}/deployments`),
          list("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"),
          list("/api/v1/pods"),
        ]);
        const messages = precheck({
          version,
          meshNamespace: orch.meshNamespace,
          revision: opts.revision,
          deployments,
          webhookConfigs,
          pods,
          skipControlPlane: opts.skipControlplane === true,
        });
        const shown = messages.filter((m) => atLeast(m.type.level, threshold));
        if (shown.length > 0 || opts.output !== "log") io.stdout(formatMessages(shown, opts.output, false));
        if (shown.length === 0) {
          io.stderr(
            "\u2714 No issues found when checking the cluster. The mesh is safe to install or upgrade!\n",
          );
        }
        if (messages.some((m) => m.type.level === "Error")) io.setExitCode(EXIT_ANALYZER_FOUND_ISSUES);
      } finally {
        await orch.close();
      }
    });
}
