/**
 * What `meshctl analyze` analyzes: mesh resources with where they came from, the namespaces known
 * to exist, and workloads that exist without a WorkloadEntry (auto-registered ones, from a running
 * meshd). Built from files (`--use-orch=false`) or from meshd's debug interface (live).
 *
 * @module
 */
import { parseYamlDocuments, type ValidationIssue, type ValidResource } from "../../shared/mod.ts";
import { validateInputs } from "../commands/validate.ts";
import { isObject } from "../json_fields.ts";
import type { MeshdDebugSource } from "../meshd_client.ts";
import type { BoundPort } from "../../shared/mod.ts";
import type { ClusterObjects } from "./live/kube_objects.ts";

/** A resource under analysis. */
export interface AnalyzedResource {
  kind: string;
  namespace: string;
  name: string;
  resource: ValidResource["resource"];
  /** `file:line`, when known. */
  reference?: string;
}

/** A workload known without a WorkloadEntry resource. */
export interface KnownWorkload {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  /** What it is when not an auto-registered workload (e.g. `Pod`). */
  kind?: string;
  /** The service ports that target it, when known (a Pod's, from the cluster's Services). */
  bound?: BoundPort[];
}

/** Everything the analyzers read. */
export interface AnalysisInput {
  resources: AnalyzedResource[];
  /** Namespaces that exist: declared by Namespace documents, or holding resources or workloads. */
  namespaces: Set<string>;
  /** Workloads besides the WorkloadEntry resources. */
  workloads: KnownWorkload[];
  rootNamespace: string;
  /** What schema validation found (offline only: meshd holds only valid resources). */
  issues: ValidationIssue[];
  /** What was analyzed, for the summary line. */
  target: string;
  /** Files given, for the "no issues" line. */
  files: string[];
  /** meshd's `/debug/mesh` `pathNormalization`, unchecked (live only; absent from an older meshd). */
  pathNormalization?: unknown;
  /** Namespaces, Pods and Services of a live cluster (`analyze` with an orchestrator config). */
  cluster?: ClusterObjects;
}

/** Completes an input: every namespace that holds a resource or workload, and the root namespace, exist. */
export function finishInput(
  resources: AnalyzedResource[],
  rest: Omit<AnalysisInput, "resources" | "namespaces"> & { namespaces?: Iterable<string> },
): AnalysisInput {
  const namespaces = new Set(rest.namespaces ?? []);
  for (const r of resources) namespaces.add(r.namespace);
  for (const w of rest.workloads) namespaces.add(w.namespace);
  namespaces.add(rest.rootNamespace);
  return { ...rest, resources, namespaces };
}

/** Options of {@link inputFromFiles}. */
export interface FileInputOptions {
  rootNamespace: string;
  defaultNamespace?: string;
}

/** Reads files and directories (`-` for standard input) as `meshctl validate` does. */
export async function inputFromFiles(files: string[], options: FileInputOptions): Promise<AnalysisInput> {
  const namespaces: string[] = [];
  const summary = await validateInputs(files, {
    ...options,
    onText: (_file, text) => {
      for (const doc of parseYamlDocuments(text)) {
        const v = doc.value;
        const name = isObject(v) && isObject(v.metadata) ? v.metadata.name : undefined;
        if (isObject(v) && v.apiVersion === "v1" && v.kind === "Namespace" && typeof name === "string") {
          namespaces.push(name);
        }
      }
    },
  });
  const resources = summary.valid.map((v) => ({
    kind: v.resource.kind,
    namespace: v.resource.metadata.namespace ?? options.defaultNamespace ?? "default",
    name: v.resource.metadata.name,
    resource: v.resource,
    reference: `${v.source.file}:${v.source.line}`,
  }));
  return finishInput(resources, {
    namespaces,
    workloads: [],
    rootNamespace: options.rootNamespace,
    issues: summary.issues,
    target: files.join(", "),
    files,
  });
}

interface ConfigzEntry {
  kind: string;
  namespace: string;
  name: string;
  resource: ValidResource["resource"];
  source?: { file: string; line: number };
}

/** A workload of meshd's /debug/registryz (the parts read). */
export interface RegistryzWorkload {
  key: string;
  name: string;
  namespace: string;
  labels: Record<string, string>;
  /** The ports bound to a service, as meshd computed them (absent from an older meshd). */
  inboundMtls?: { port: number }[];
}

/**
 * The registry's workloads that no WorkloadEntry declares (auto-registered ones), with the ports meshd
 * found bound to a service, so that the analyzers judge their ports as they judge pods'.
 *
 * @param declared `<namespace>/<name>` of the WorkloadEntries under analysis
 */
export function undeclaredWorkloads(workloads: RegistryzWorkload[], declared: Set<string>): KnownWorkload[] {
  return workloads.filter((w) => !declared.has(w.key)).map((w) => ({
    namespace: w.namespace,
    name: w.name,
    labels: w.labels,
    ...(w.inboundMtls === undefined ? {} : {
      bound: w.inboundMtls.filter((m) => m.port > 0).map((m) => ({
        service: "",
        servicePort: { number: m.port },
        containerPort: m.port,
      })),
    }),
  }));
}

/**
 * Reads meshd's config in force (/debug/configz), its registry (/debug/registryz: auto-registered
 * workloads too) and its mesh config (/debug/mesh, for the root namespace).
 */
export async function inputFromMeshd(client: MeshdDebugSource): Promise<AnalysisInput> {
  const [configz, registryz, mesh] = await Promise.all([
    client.json<{ resources: ConfigzEntry[] }>("/debug/configz"),
    client.json<{ workloads: RegistryzWorkload[] }>("/debug/registryz"),
    client.json<{ rootNamespace: string; pathNormalization?: unknown }>("/debug/mesh"),
  ]);
  const resources = configz.resources.map((e) => ({
    kind: e.kind,
    namespace: e.namespace,
    name: e.name,
    resource: e.resource,
    reference: e.source ? `${e.source.file}:${e.source.line}` : undefined,
  }));
  const declared = new Set(
    resources.filter((r) => r.kind === "WorkloadEntry").map((r) => `${r.namespace}/${r.name}`),
  );
  return finishInput(resources, {
    workloads: undeclaredWorkloads(registryz.workloads, declared),
    rootNamespace: mesh.rootNamespace,
    issues: [],
    target: `meshd at ${client.address}`,
    files: [],
    ...(mesh.pathNormalization === undefined ? {} : { pathNormalization: mesh.pathNormalization }),
  });
}
