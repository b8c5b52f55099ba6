/**
 * `meshctl experimental workload entry configure` (meshctl seed, "experimental"): the files a VM needs
 * to run the proxy as a member of a WorkloadGroup, in `--output`: `mesh.yaml` (mesh config),
 * `cluster.env` (the proxy's environment and a ready `MESH_PROXY_ARGS` command line), `root-cert.pem`
 * (meshd's trust bundle) and `mesh-token` (a bootstrap token valid `--tokenDuration` seconds), plus
 * `hosts` when `--ingressIP` is given. The group comes from `--file` or, without it, from meshd's
 * config (`--name`, `-n`). Root certificate and token come from meshd's debug interface, which mints
 * tokens for loopback clients only: run it on meshd's host.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { join } from "node:path";
import { stringify } from "yaml";
import { type MeshResource, type ResourceOf, validateText } from "../../shared/mod.ts";
import type { CliIo } from "../cli_io.ts";
import { addDebugFlags, meshdClient } from "../debug_flags.ts";
import { globalOptions } from "../global_options.ts";
import type { MeshdDebugSource } from "../meshd_client.ts";
import { parseBool } from "../../shared/internal/cli/pflag.ts";

interface Group {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  serviceAccount: string;
  ports: Record<string, number>;
  network?: string;
}

function groupOf(resource: Pick<ResourceOf<"WorkloadGroup">, "metadata" | "spec">): Group {
  const spec = resource.spec;
  return {
    name: resource.metadata.name,
    namespace: resource.metadata.namespace ?? "default",
    labels: spec.metadata?.labels ?? {},
    serviceAccount: spec.template?.serviceAccount || "default",
    ports: spec.template?.ports ?? {},
    network: spec.template?.network,
  };
}

async function groupFromFile(file: string): Promise<Group> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    throw new Error(
      `--file ${file}: ${
        e instanceof Deno.errors.NotFound ? "no such file" : e instanceof Error ? e.message : String(e)
      }`,
    );
  }
  const result = validateText(text, file);
  const errors = result.issues.filter((i) => i.severity === "error");
  if (errors.length > 0) {
    throw new Error(
      `--file ${file}: ${errors.map((e) => `line ${e.line ?? "?"}: ${e.field}: ${e.message}`).join("; ")}`,
    );
  }
  const groups = result.resources.flatMap((r) => r.resource.kind === "WorkloadGroup" ? [r.resource] : []);
  if (groups.length !== 1) {
    throw new Error(`--file ${file}: expected one WorkloadGroup, found ${groups.length}`);
  }
  return groupOf(groups[0]);
}

async function groupFromMeshd(
  client: MeshdDebugSource,
  name: string | undefined,
  namespace: string,
): Promise<Group> {
  if (!name) {
    throw new Error(
      "workload entry configure needs --file <WorkloadGroup YAML> or --name <group> (read from meshd)",
    );
  }
  // meshd's config in force: resources it validated, typed by kind as validateText returns them.
  const configz = await client.json<
    { resources: { namespace: string; name: string; resource: MeshResource }[] }
  >(
    "/debug/configz",
  );
  for (const r of configz.resources) {
    if (r.resource.kind === "WorkloadGroup" && r.name === name && r.namespace === namespace) {
      return groupOf(r.resource);
    }
  }
  throw new Error(`WorkloadGroup ${namespace}/${name} not found in meshd's config at ${client.address}`);
}

function shellQuote(v: string): string {
  return /^[A-Za-z0-9_\-.,:/=@+]*$/.test(v) && v !== "" ? v : `'${v.replaceAll("'", `'"'"'`)}'`;
}

/** Builds `workload entry configure`. */
export function entryConfigureCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("configure")
    .description(
      "Write mesh.yaml, cluster.env, root-cert.pem and mesh-token (and hosts with --ingressIP) for a workload " +
        "of a WorkloadGroup; run it on meshd's host (bootstrap tokens are issued to loopback clients only)",
    )
    .option("-f, --file <file>", "the WorkloadGroup YAML; without it, --name is read from meshd's config")
    .option("--name <name>", "the WorkloadGroup's name (with meshd's config)")
    .requiredOption("-o, --output <dir>", "directory for the files")
    .option("--autoregister [bool]", "register the WorkloadEntry when the proxy connects", parseBool, false)
    .option("--capture-dns [bool]", "capture DNS (no effect: the proxy has no DNS proxy)", parseBool, true)
    .option("--clusterID <id>", "cluster ID", "Kubernetes")
    .option("--externalIP <ip>", "the workload's external IP (INSTANCE_IP when no --internalIP)")
    .option("--internalIP <ip>", "the workload's IP (INSTANCE_IP)")
    .option("--ingressIP <ip>", "IP through which meshd is reached; writes hosts")
    .option(
      "--ingressService <service>",
      "east-west gateway (no effect: no gateways)",
      "mesh-eastwestgateway",
    )
    .option("-r, --revision <revision>", "control plane revision (no effect: one meshd)")
    .addOption(
      new Option("--tokenDuration <seconds>", "bootstrap token lifetime in seconds").default("3600"),
    );
  addDebugFlags(cmd);
  cmd.action(async (opts, command) => {
    const globals = globalOptions(command);
    const duration = Number(opts.tokenDuration);
    if (!Number.isInteger(duration) || duration <= 0) {
      throw new Error(`--tokenDuration: "${opts.tokenDuration}" is not a positive number of seconds`);
    }
    const client = meshdClient(command.opts());
    const group = opts.file
      ? await groupFromFile(opts.file)
      : await groupFromMeshd(client, opts.name, globals.namespace || "default");
    const mesh = await client.json<{ rootNamespace: string; trustDomain: string }>("/debug/mesh");
    const rootCert = await client.text("/debug/rootCert");
    const token = await client.post<{ token: string; expiresAt: string }>("/debug/bootstrapToken", {
      namespace: group.namespace,
      serviceAccount: group.serviceAccount,
      durationSeconds: duration,
    });
    const discoveryAddress = `meshd.${globals.meshNamespace}.svc:15012`;
    const dir = opts.output;
    const ip = opts.internalIP ?? opts.externalIP;
    const labels = Object.entries(group.labels).map(([k, v]) => `${k}=${v}`).join(",");
    const proxyArgs = [
      `--discoveryAddress=${discoveryAddress}`,
      `--namespace=${group.namespace}`,
      `--serviceAccount=${group.serviceAccount}`,
      opts.autoregister ? `--workloadGroup=${group.name}` : `--workloadEntry=${group.name}`,
      ...(labels ? [`--labels=${labels}`] : []),
      `--tokenFile=${join(dir, "mesh-token")}`,
      `--rootCertFile=${join(dir, "root-cert.pem")}`,
      ...Object.values(group.ports).map((p) => `--inbound=${p}=127.0.0.1:${p}`),
    ];
    const env: Record<string, string> = {
      CANONICAL_SERVICE: group.labels["service.istio.io/canonical-name"] ?? group.labels.app ?? group.name,
      CLUSTER_ID: opts.clusterID,
      MESH_INBOUND_PORTS: Object.values(group.ports).join(","),
      MESH_META_WORKLOAD_NAME: group.name,
      ...(opts.autoregister ? { MESH_META_AUTO_REGISTER_GROUP: group.name } : {}),
      ...(group.network ? { MESH_META_NETWORK: group.network } : {}),
      ...(ip ? { INSTANCE_IP: ip } : {}),
      POD_NAMESPACE: group.namespace,
      SERVICE_ACCOUNT: group.serviceAccount,
      MESH_PROXY_ARGS: proxyArgs.join(" "),
    };
    await Deno.mkdir(dir, { recursive: true });
    const files: Record<string, string> = {
      "cluster.env": Object.entries(env).map(([k, v]) => `${k}=${shellQuote(v)}\n`).join(""),
      "mesh.yaml": stringify({
        rootNamespace: mesh.rootNamespace,
        trustDomain: mesh.trustDomain,
        defaultConfig: {
          discoveryAddress,
          proxyMetadata: { CANONICAL_SERVICE: env.CANONICAL_SERVICE, POD_NAMESPACE: group.namespace },
        },
      }),
      "root-cert.pem": rootCert,
      "mesh-token": token.token,
      ...(opts.ingressIP ? { hosts: `${opts.ingressIP} meshd.${globals.meshNamespace}.svc\n` } : {}),
    };
    for (const [name, text] of Object.entries(files)) {
      await Deno.writeTextFile(join(dir, name), text, { mode: name === "mesh-token" ? 0o600 : 0o644 });
    }
    io.stderr(
      `wrote ${
        Object.keys(files).join(", ")
      } to ${dir} for WorkloadGroup ${group.namespace}/${group.name}; ` +
        `the token expires at ${token.expiresAt}\n`,
    );
  });
  return cmd;
}
