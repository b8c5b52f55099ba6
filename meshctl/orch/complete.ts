/**
 * Dynamic shell completion from the cluster (issue 15, item 5), as istioctl's cobra completion:
 * the completion scripts call `meshctl __complete <words so far> <word being completed>`, which prints
 * one candidate per line, then cobra's directive line `:4` (ShellCompDirectiveNoFileComp).
 *
 * What completes (the orchestrator flags among the words apply: `-c`, `--context`, `-n`, `-i`, `--as`…):
 * - the value of `-n/--namespace` and `-i/--meshNamespace`: namespace names;
 * - the value of `--context`: the kubeconfig's contexts (no request);
 * - an argument named `target…` (proxy-config, proxy-status, x proxy-stats, authz check…): proxies, as
 *   `<pod>.<namespace>`, the pods of the namespace that have the injected `mesh-proxy` container;
 * - an argument named `pod…`: pod names of the namespace; `namespace…`: namespace names.
 *
 * A command another change adds completes the same way by naming its argument so. Nothing is printed
 * but the directive when there is no cluster, or it does not answer within 5 s.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { walkArgs } from "../command_check.ts";
import { DEFAULT_MESH_NAMESPACE } from "../global_options.ts";
import { loadOrchConfig, type OrchClient, orchClient, type OrchFlags } from "./orch_client.ts";

/** The hidden command the completion scripts call (cobra's name). */
export const COMPLETE_COMMAND = "__complete";

/** The container meshd's injector adds (meshd/webhooks/inject_patch.ts PROXY_CONTAINER). */
export const PROXY_CONTAINER = "mesh-proxy";

/** cobra's ShellCompDirectiveNoFileComp: the shell offers no file names. */
const NO_FILE_COMP = ":4";

const TIMEOUT_MS = 5000;

interface Pod {
  metadata: { name: string; namespace: string };
  spec?: { containers?: { name: string }[]; initContainers?: { name: string }[] };
}

/** What the word being completed is, from the words before it. */
type Want = "namespace" | "context" | "pod" | "proxy" | undefined;

function wanted(words: string[], program: CommandUnknownOpts): { want: Want; flags: OrchFlags } {
  const before = words.slice(0, -1);
  const walk = walkArgs(before, program);
  const last = (key: string) => walk.values.get(key)?.at(-1) ?? "";
  const flags: OrchFlags = {
    orchconfig: last("orchconfig"),
    context: last("context"),
    as: last("as"),
    asGroup: walk.values.get("asGroup") ?? [],
    asUid: last("asUid"),
    namespace: last("namespace"),
    meshNamespace: last("meshNamespace") || DEFAULT_MESH_NAMESPACE,
  };
  const prev = before.at(-1) ?? "";
  const prevOption = prev.startsWith("-") && !prev.includes("=")
    ? walk.chain.flatMap((c) => c.options).find((o) => o.long === prev || o.short === prev)
    : undefined;
  if (prevOption) {
    const key = prevOption.attributeName();
    if (key === "namespace" || key === "meshNamespace") return { want: "namespace", flags };
    if (key === "context") return { want: "context", flags };
    return { want: undefined, flags };
  }
  if (words.at(-1)?.startsWith("-")) return { want: undefined, flags };
  const leaf = walk.chain[walk.chain.length - 1];
  const arg = leaf.registeredArguments[walk.positionals.length] ??
    (leaf.registeredArguments.at(-1)?.variadic ? leaf.registeredArguments.at(-1) : undefined);
  const name = arg?.name() ?? "";
  if (name.startsWith("target")) return { want: "proxy", flags };
  if (name.startsWith("pod")) return { want: "pod", flags };
  if (name.startsWith("namespace")) return { want: "namespace", flags };
  return { want: undefined, flags };
}

async function fromCluster(client: OrchClient, want: Want, signal: AbortSignal): Promise<string[]> {
  if (want === "namespace") {
    const list = await client.api.json<{ items: { metadata: { name: string } }[] }>(
      "GET",
      "/api/v1/namespaces",
      {
        signal,
      },
    );
    return list.items.map((n) => n.metadata.name);
  }
  const pods = await client.api.json<{ items: Pod[] }>("GET", `/api/v1/namespaces/${client.namespace}/pods`, {
    signal,
  });
  if (want === "pod") return pods.items.map((p) => p.metadata.name);
  const hasProxy = (p: Pod) =>
    [...(p.spec?.containers ?? []), ...(p.spec?.initContainers ?? [])].some((c) =>
      c.name === PROXY_CONTAINER
    );
  return pods.items.filter(hasProxy).map((p) => `${p.metadata.name}.${p.metadata.namespace}`);
}

/**
 * The candidates for the last of `words` (the arguments after the program name, the last one the
 * partial word, possibly empty), filtered by its prefix, sorted.
 *
 * @param env the process environment (KUBECONFIG, HOME)
 * @returns the candidates; empty when nothing dynamic completes there or the cluster cannot be read
 */
export async function completions(
  words: string[],
  program: CommandUnknownOpts,
  env: Record<string, string | undefined> = Deno.env.toObject(),
): Promise<string[]> {
  const partial = words.at(-1) ?? "";
  const { want, flags } = wanted(words.length === 0 ? [""] : words, program);
  let found: string[] = [];
  try {
    if (want === "context") {
      found = loadOrchConfig(flags, env).config.contexts.map((c) => c.name);
    } else if (want !== undefined) {
      const client = orchClient(flags, env);
      try {
        found = await fromCluster(client, want, AbortSignal.timeout(TIMEOUT_MS));
      } finally {
        await client.close();
      }
    }
  } catch {
    // Completion stays quiet: no cluster, no candidates (cobra prints nothing either).
  }
  return found.filter((c) => c.startsWith(partial)).sort();
}

/**
 * Runs `meshctl __complete <words…>`: the candidates, one per line, then the directive `:4`.
 *
 * @returns the exit code (0)
 */
export async function runComplete(
  words: string[],
  program: CommandUnknownOpts,
  write: (text: string) => void,
): Promise<number> {
  const found = await completions(words, program);
  write(found.map((c) => `${c}\n`).join("") + `${NO_FILE_COMP}\n`);
  return 0;
}
