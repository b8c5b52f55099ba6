/**
 * meshctl's orchestrator client (meshctl seed, "Common flags"; issue 15, item 1): the Kubernetes API
 * that `-c/--orchconfig`, `--context`, `--as`, `--as-group`, `--as-uid`, `-n/--namespace` and
 * `-i/--meshNamespace` name, as kubectl and istioctl resolve them:
 *
 * - the kubeconfig: `--orchconfig`, else the files of `KUBECONFIG` (path-list, merged: the first file
 *   that sets a value wins, as client-go), else `~/.kube/config`; else the in-cluster config when
 *   `KUBERNETES_SERVICE_HOST` is set (a pod), as client-go's `clientcmd` defaults;
 * - the context: `--context`, else the kubeconfig's current-context;
 * - the namespace: `-n`, else the context's namespace, else `default`;
 * - impersonation: `--as`, `--as-group` (repeatable) and `--as-uid` become the Impersonate-User,
 *   Impersonate-Group and Impersonate-Uid headers (kubectl refuses groups or a uid without `--as`,
 *   and so does this); without `--as`, the kubeconfig user's `as` applies (client-node).
 *
 * Loading, contexts and credentials are @kubernetes/client-node's KubeConfig; requests go through
 * the shared {@link ApiClient} (not client-node's transport: see that file's docs).
 *
 * @module
 */
import { delimiter, join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { ApiClient } from "../../shared/internal/kube/api_client.ts";
import { DEFAULT_MESH_NAMESPACE } from "../global_options.ts";

/** No kubeconfig was given or found (and not in a pod): commands that can do without one go on. */
export class NoOrchConfigError extends Error {}

/** The orchestrator flags of the root command, as given (empty strings when not given). */
export interface OrchFlags {
  /** `-c, --orchconfig`: a kubeconfig file. */
  orchconfig: string;
  /** `--context`: the kubeconfig context to use. */
  context: string;
  /** `--as`: user to impersonate. */
  as: string;
  /** `--as-group`: groups to impersonate. */
  asGroup: string[];
  /** `--as-uid`: UID to impersonate. */
  asUid: string;
  /** `-n, --namespace`. */
  namespace: string;
  /** `-i, --meshNamespace`. */
  meshNamespace: string;
}

/** The orchestrator flags when none is given (a new object each time). */
export function defaultOrchFlags(): OrchFlags {
  return {
    orchconfig: "",
    context: "",
    as: "",
    asGroup: [],
    asUid: "",
    namespace: "",
    meshNamespace: DEFAULT_MESH_NAMESPACE,
  };
}

/** Impersonation headers of {@link OrchFlags}: `[name, value]` pairs (Impersonate-Group repeats). */
export type ImpersonationHeaders = [string, string][];

/** A connected orchestrator client. */
export interface OrchClient {
  /** The loaded kubeconfig, its current context set to the one in use. */
  config: KubeConfig;
  /** Requests to the context's API server, with its credentials and the impersonation headers. */
  api: ApiClient;
  /** The context in use ("" for the in-cluster config). */
  context: string;
  /** `-n`, else the context's namespace, else `default`. */
  namespace: string;
  /** `-i, --meshNamespace` (default mesh-system). */
  meshNamespace: string;
  /** `the Kubernetes API at <server> (<where the config came from>, context <name>)`, for messages. */
  description: string;
  /** Closes the API client's connections. */
  close(): Promise<void>;
}

/**
 * Reads the orchestrator flags from a command's root (a command built on its own gets the defaults).
 *
 * @throws Error naming the flag when commander holds a value of the wrong type
 */
export function orchFlags(command: CommandUnknownOpts): OrchFlags {
  const opts: Record<string, unknown> = command.optsWithGlobals();
  const str = (v: unknown, flag: string, fallback = ""): string => {
    if (v === undefined) return fallback;
    if (typeof v !== "string") throw new Error(`${flag}: expected a string, got ${typeof v}`);
    return v;
  };
  const groups = opts.asGroup ?? [];
  if (!Array.isArray(groups)) throw new Error("--as-group: expected a list");
  return {
    orchconfig: str(opts.orchconfig, "--orchconfig"),
    context: str(opts.context, "--context"),
    as: str(opts.as, "--as"),
    asGroup: groups.map(String),
    asUid: str(opts.asUid, "--as-uid"),
    namespace: str(opts.namespace, "--namespace"),
    meshNamespace: str(opts.meshNamespace, "--meshNamespace", DEFAULT_MESH_NAMESPACE) ||
      DEFAULT_MESH_NAMESPACE,
  };
}

/**
 * The kubeconfig the flags and environment name, with the context selected.
 *
 * @param env the process environment (KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST)
 * @returns the config and where it came from
 * @throws Error naming the file or context: unreadable or invalid file, unknown `--context`;
 *   {@link NoOrchConfigError} when there is no kubeconfig at all
 */
export function loadOrchConfig(
  flags: Pick<OrchFlags, "orchconfig" | "context">,
  env: Record<string, string | undefined>,
): { config: KubeConfig; source: string } {
  const config = new KubeConfig();
  let source: string;
  if (flags.orchconfig !== "") {
    loadFile(config, flags.orchconfig, "--orchconfig");
    source = `--orchconfig ${flags.orchconfig}`;
  } else if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(delimiter).filter((f) => f !== "" && exists(f));
    if (files.length === 0) {
      throw new Error(`KUBECONFIG=${env.KUBECONFIG}: none of its files exists`);
    }
    loadFile(config, files[0], "KUBECONFIG");
    for (const f of files.slice(1)) {
      const more = new KubeConfig();
      loadFile(more, f, "KUBECONFIG");
      mergeFirstWins(config, more);
    }
    source = `KUBECONFIG ${files.join(delimiter)}`;
  } else if (env.HOME && exists(join(env.HOME, ".kube", "config"))) {
    const file = join(env.HOME, ".kube", "config");
    loadFile(config, file, "~/.kube/config");
    source = file;
  } else if (env.KUBERNETES_SERVICE_HOST) {
    config.loadFromCluster();
    source = "in-cluster config";
  } else {
    throw new NoOrchConfigError(
      "no orchestrator configuration: give -c/--orchconfig, set KUBECONFIG, or create ~/.kube/config",
    );
  }
  if (flags.context !== "") {
    if (!config.getContextObject(flags.context)) {
      throw new Error(`--context: context "${flags.context}" does not exist in ${source}`);
    }
    config.setCurrentContext(flags.context);
  }
  return { config, source };
}

/**
 * The namespace for resources that name none: `-n`, else the context's namespace, else `default`.
 */
export function resolveNamespace(config: KubeConfig, flag: string): string {
  if (flag !== "") return flag;
  return config.getContextObject(config.getCurrentContext())?.namespace || "default";
}

/**
 * The Impersonate-* headers of `--as`, `--as-group` and `--as-uid`.
 *
 * @throws Error when groups or a uid are given without `--as` (kubectl's rule)
 */
export function impersonationHeaders(
  flags: Pick<OrchFlags, "as" | "asGroup" | "asUid">,
): ImpersonationHeaders {
  if (flags.as === "") {
    if (flags.asGroup.length > 0 || flags.asUid !== "") {
      throw new Error("--as-group and --as-uid need --as: give the user to impersonate");
    }
    return [];
  }
  return [
    ["Impersonate-User", flags.as],
    ...flags.asGroup.map((g): [string, string] => ["Impersonate-Group", g]),
    ...(flags.asUid === "" ? [] : [["Impersonate-Uid", flags.asUid] as [string, string]]),
  ];
}

/**
 * Connects to the orchestrator the flags name.
 *
 * @param flags from {@link orchFlags}
 * @param env the process environment (default Deno's)
 * @throws Error as {@link loadOrchConfig} and {@link impersonationHeaders}, or when the context names
 *   no cluster server
 */
export function orchClient(
  flags: OrchFlags,
  env: Record<string, string | undefined> = Deno.env.toObject(),
): OrchClient {
  const { config, source } = loadOrchConfig(flags, env);
  const context = config.getCurrentContext();
  const server = config.getCurrentCluster()?.server;
  if (!server) throw new Error(`${source}: context "${context}" names no cluster server`);
  const api = new ApiClient(config, { headers: impersonationHeaders(flags) });
  return {
    config,
    api,
    context,
    namespace: resolveNamespace(config, flags.namespace),
    meshNamespace: flags.meshNamespace,
    description: `the Kubernetes API at ${server} (${source}${context ? `, context ${context}` : ""})`,
    close: () => api.close(),
  };
}

/** Connects to the orchestrator the root flags of `command` name (see {@link orchClient}). */
export function commandOrchClient(command: CommandUnknownOpts): OrchClient {
  return orchClient(orchFlags(command));
}

function loadFile(config: KubeConfig, file: string, flag: string): void {
  try {
    config.loadFromFile(file);
  } catch (e) {
    throw new Error(`${flag}: ${file}: ${(e as Error).message}`);
  }
}

function exists(file: string): boolean {
  try {
    Deno.statSync(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * client-go's merge of KUBECONFIG files: the first file to set a cluster, user or context name (or
 * current-context) keeps it. client-node's `mergeConfig` throws on duplicate names instead.
 */
function mergeFirstWins(into: KubeConfig, more: KubeConfig): void {
  const names = (xs: { name: string }[]) => new Set(xs.map((x) => x.name));
  const clusters = names(into.clusters), users = names(into.users), contexts = names(into.contexts);
  into.loadFromOptions({
    clusters: [...into.clusters, ...more.clusters.filter((c) => !clusters.has(c.name))],
    users: [...into.users, ...more.users.filter((u) => !users.has(u.name))],
    contexts: [...into.contexts, ...more.contexts.filter((c) => !contexts.has(c.name))],
    currentContext: into.getCurrentContext() || more.getCurrentContext(),
  });
}
