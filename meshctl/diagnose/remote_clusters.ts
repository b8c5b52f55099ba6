/**
 * `meshctl remote-clusters` (meshctl seed, "remote-clusters"): the remote clusters the control plane
 * is given, as istioctl lists them (NAME, SECRET, STATUS; istioctl adds ISTIOD). istioctl asks each istiod
 * (/debug/clusterz); meshd serves one cluster and has no such endpoint, so this lists the remote
 * secrets of the mesh namespace (label `istio/multiCluster=true`, from `create-remote-secret`) with
 * the status that is true today: meshd does not connect to them. Partial until meshd reads remote
 * secrets; `--revision` selects secrets whose `istio.io/rev`/`mesh.io/rev` label names it, when set.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { table } from "../output.ts";
import { commandOrchClient } from "../orch/orch_client.ts";
import { REVISION_LABELS } from "../../shared/internal/inject/injection_policy.ts";
import { labelsOf, obj, objs } from "./kube_json.ts";

/** What the STATUS column says for every remote cluster today. */
export const NOT_CONNECTED = "not connected (meshd reads no remote secrets)";

/** One row: a cluster named by a remote secret. */
export interface RemoteCluster {
  name: string;
  secret: string;
}

/** The clusters the remote secrets name (each key of a secret's data is a cluster). */
export function remoteClusters(secrets: unknown[], revision: string | undefined): RemoteCluster[] {
  const out: RemoteCluster[] = [];
  for (const s of objs(secrets)) {
    const meta = obj(s.metadata);
    const labels = labelsOf(meta, "labels");
    if (labels["istio/multiCluster"] !== "true") continue;
    const rev = REVISION_LABELS.map((k) => labels[k]).find((v) => v !== undefined);
    if (revision !== undefined && rev !== undefined && rev !== revision) continue;
    for (const name of Object.keys({ ...obj(s.data), ...obj(s.stringData) })) {
      out.push({ name, secret: `${String(meta.namespace)}/${String(meta.name)}` });
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** Builds `remote-clusters`. */
export function remoteClustersCommand(io: CliIo): CommandUnknownOpts {
  return new Command("remote-clusters")
    .description(
      "List the remote clusters given to the control plane (the remote secrets of the mesh namespace); " +
        "partial: meshd serves one cluster and connects to none of them",
    )
    .option("-r, --revision <revision>", "only secrets of this revision")
    .action(async (opts, command) => {
      const orch = commandOrchClient(command);
      try {
        const secrets = await orch.api.json<{ items?: unknown[] }>(
          "GET",
          `/api/v1/namespaces/${encodeURIComponent(orch.meshNamespace)}/secrets`,
          { query: { labelSelector: "istio/multiCluster=true" } },
        );
        const rows = remoteClusters(secrets.items ?? [], opts.revision);
        io.stdout(
          table(
            ["NAME", "SECRET", "STATUS"],
            rows.map((r) => [r.name, r.secret, NOT_CONNECTED]),
          ),
        );
      } finally {
        await orch.close();
      }
    });
}
