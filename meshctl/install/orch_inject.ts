/**
 * `orch-inject` (seed 002 "orch-inject"; istioctl's `kube-inject`): injects the sidecar into the pod
 * templates of workload resources offline, with the code of meshd's injection webhook
 * (shared/internal/inject: the same decision for what the pod says, the same JSONPatch), so a resource
 * injected here equals what the webhook makes of it. Kinds: Pod, Deployment, ReplicaSet, StatefulSet,
 * DaemonSet, ReplicationController, Job (their `spec.template`) and CronJob
 * (`spec.jobTemplate.spec.template`); every other document, and a pod that opts out or runs on the host
 * network, passes unchanged (its text as given), so multi-resource files are safe. As kube-inject,
 * namespace labels play no part: injecting is what was asked for.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import { parseAllDocuments, stringify } from "yaml";
import type { CliIo } from "../cli_io.ts";
import { globalOptions } from "../global_options.ts";
import { injectionDecision } from "../../shared/internal/inject/injection_policy.ts";
import { injectionPatch, type InjectionSettings } from "../../shared/internal/inject/inject_patch.ts";
import { applyJsonPatch, isObject, type JsonObject } from "../../shared/internal/inject/json.ts";
import {
  defaultTemplate,
  type InjectionTemplate,
  loadTemplate,
  parseTemplate,
} from "../../shared/internal/inject/template.ts";

/** The token audience of meshd's Deployment (deploy/kubernetes/meshd.yaml TOKEN_AUDIENCES). */
export const DEFAULT_TOKEN_AUDIENCE = "mesh-ca";

const TEMPLATE_PATHS: Record<string, string[]> = {
  Deployment: ["spec", "template"],
  ReplicaSet: ["spec", "template"],
  StatefulSet: ["spec", "template"],
  DaemonSet: ["spec", "template"],
  ReplicationController: ["spec", "template"],
  Job: ["spec", "template"],
  CronJob: ["spec", "jobTemplate", "spec", "template"],
};

/**
 * Injects one resource.
 *
 * @returns the injected resource, or undefined when it passes unchanged (unsupported kind, or the pod
 *   opts out)
 * @throws Error naming the resource when a label or annotation has a bad value
 */
export function injectResource(
  o: JsonObject,
  template: InjectionTemplate,
  settings: InjectionSettings,
  namespace: string,
): JsonObject | undefined {
  const kind = String(o.kind);
  const meta = isObject(o.metadata) ? o.metadata : {};
  const ns = typeof meta.namespace === "string" && meta.namespace !== "" ? meta.namespace : namespace;
  let pod: JsonObject;
  if (kind === "Pod" && o.apiVersion === "v1") {
    pod = o;
  } else if (TEMPLATE_PATHS[kind]) {
    const path = TEMPLATE_PATHS[kind];
    let at: unknown = o;
    for (const seg of path.slice(0, -1)) at = isObject(at) ? at[seg] : undefined;
    if (!isObject(at) || !isObject(at[path[path.length - 1]])) return undefined;
    const t = at[path[path.length - 1]] as JsonObject;
    pod = { apiVersion: "v1", kind: "Pod", metadata: t.metadata ?? {}, spec: t.spec ?? {} };
  } else {
    return undefined;
  }
  const decision = injectionDecision(pod, {
    namespace: ns,
    namespaceLabels: undefined,
    revision: settings.revision,
    policy: "enabled",
  });
  if (!decision.inject) return undefined;
  const injected = applyJsonPatch(pod, injectionPatch(pod, template, settings));
  if (kind === "Pod") return injected;
  const out = structuredClone(o);
  const path = TEMPLATE_PATHS[kind];
  let at: JsonObject = out;
  for (const seg of path.slice(0, -1)) at = at[seg] as JsonObject;
  at[path[path.length - 1]] = { metadata: injected.metadata, spec: injected.spec };
  return out;
}

/**
 * Injects every document of a YAML stream; documents that pass unchanged keep their text.
 *
 * @throws Error naming `source` and the document when one does not parse or injection fails
 */
export function injectYaml(
  text: string,
  source: string,
  template: InjectionTemplate,
  settings: InjectionSettings,
  namespace: string,
): string {
  const out: string[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    const where = `${source}: document ${i + 1}`;
    if (doc.errors.length > 0) throw new Error(`${where}: ${doc.errors[0].message}`);
    const o = doc.toJS();
    const [start, , end] = doc.range;
    const original = text.slice(start, end).replace(/^---\s*\n/, "").replace(/\s*$/, "\n");
    if (!isObject(o)) {
      if (o !== null && o !== undefined) out.push(original);
      return;
    }
    let injected: JsonObject | undefined;
    try {
      injected = injectResource(o, template, settings, namespace);
    } catch (e) {
      throw new Error(
        `${where} (${String(o.kind)} ${String((o.metadata as JsonObject)?.name)}): ${(e as Error).message}`,
      );
    }
    out.push(injected ? stringify(injected, { lineWidth: 0 }) : original);
  });
  return out.join("---\n");
}

async function template(
  opts: { injectConfigFile?: string; valuesFile?: string },
  ns: string,
  revision: string,
): Promise<InjectionTemplate> {
  if (opts.injectConfigFile && opts.valuesFile) {
    throw new Error(
      "--injectConfigFile and --valuesFile: give one (a ConfigMap file or directory holds both)",
    );
  }
  if (opts.injectConfigFile) {
    await Deno.stat(opts.injectConfigFile).catch((e) => {
      throw new Error(`--injectConfigFile ${opts.injectConfigFile}: ${(e as Error).message}`);
    });
    return await loadTemplate(opts.injectConfigFile, ns, revision);
  }
  if (opts.valuesFile) {
    const values = await Deno.readTextFile(opts.valuesFile).catch((e) => {
      throw new Error(`--valuesFile ${opts.valuesFile}: ${(e as Error).message}`);
    });
    return parseTemplate({ config: undefined, values }, opts.valuesFile, ns, revision);
  }
  return defaultTemplate(ns, revision);
}

const NOT_REMOTE = "(no effect: orch-inject injects offline with meshd's injection code)";

/** Builds `orch-inject`. */
export function orchInjectCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("orch-inject")
    .description(
      "Inject the sidecar into workload resources (offline, with meshd's webhook code); other resources pass unchanged",
    )
    .requiredOption("-f, --filename <file>", "input file; - for standard input")
    .option("-o, --output <file>", "output file (default standard output)")
    .option(
      "--injectConfigFile <file>",
      "injection template: a ConfigMap file, or a directory with config and values (as meshd reads)",
    )
    .option("--valuesFile <file>", "injection values (global.*, as meshd's template values)")
    .option("-r, --revision <revision>", "the control plane revision recorded in the status annotation", "")
    .option(
      "--token-audience <audience>",
      "audience of the projected token (meshd's TOKEN_AUDIENCES)",
      DEFAULT_TOKEN_AUDIENCE,
    )
    .option("--native-sidecars", "inject the proxy as a native sidecar (meshd's ENABLE_NATIVE_SIDECARS)")
    .option("--meshConfigFile <file>", `mesh config file ${NOT_REMOTE}`)
    .option("--meshConfigMapName <name>", `mesh config map name ${NOT_REMOTE}`, "mesh")
    .option("--injectConfigMapName <name>", `injection config map name ${NOT_REMOTE}`)
    .option("--operatorFileName <file>", `install resource ${NOT_REMOTE}`)
    .option("--webhookConfig <name>", `injector webhook configuration ${NOT_REMOTE}`, "mesh-sidecar-injector")
    .option("--xds-address <address>", `meshd's xDS address ${NOT_REMOTE}`);
  cmd.action(async (opts, command) => {
    const g = globalOptions(command);
    const text = opts.filename === "-"
      ? await new Response(Deno.stdin.readable).text()
      : await Deno.readTextFile(opts.filename).catch((e) => {
        throw new Error(`-f ${opts.filename}: ${(e as Error).message}`);
      });
    const settings: InjectionSettings = {
      nativeSidecars: opts.nativeSidecars === true,
      tokenAudience: opts.tokenAudience,
      revision: opts.revision || "default",
    };
    const out = injectYaml(
      text,
      opts.filename === "-" ? "(stdin)" : opts.filename,
      await template(opts, g.meshNamespace, opts.revision),
      settings,
      g.namespace || "default",
    );
    if (opts.output) await Deno.writeTextFile(opts.output, out);
    else io.stdout(out);
  });
  return cmd;
}
