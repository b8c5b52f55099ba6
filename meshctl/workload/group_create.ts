/**
 * `meshctl experimental workload group create` (meshctl seed, "experimental"): a WorkloadGroup as
 * YAML on standard output, validated with the shared validator before it is printed.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import { stringify } from "yaml";
import { formatIssue, validateText } from "../../shared/mod.ts";
import type { CliIo } from "../cli_io.ts";
import { collectStrings } from "../../shared/internal/cli/pflag.ts";
import { globalOptions } from "../global_options.ts";

/**
 * Parses `key=value` items of a flag.
 *
 * @throws Error naming the flag and the item
 */
export function keyValues(flag: string, items: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new Error(`${flag}: "${item}" is not key=value`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

/** What `workload group create` takes. */
export interface GroupOptions {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  ports: Record<string, number>;
  serviceAccount: string;
  network?: string;
  locality?: string;
}

/**
 * The WorkloadGroup YAML.
 *
 * @throws Error with every validation issue, naming the field
 */
export function workloadGroupYaml(o: GroupOptions): string {
  const metadata: Record<string, unknown> = {};
  if (Object.keys(o.labels).length > 0) metadata.labels = o.labels;
  if (Object.keys(o.annotations).length > 0) metadata.annotations = o.annotations;
  const template: Record<string, unknown> = { serviceAccount: o.serviceAccount };
  if (Object.keys(o.ports).length > 0) template.ports = o.ports;
  if (o.network) template.network = o.network;
  if (o.locality) template.locality = o.locality;
  const yaml = stringify({
    apiVersion: "networking.mesh.io/v1",
    kind: "WorkloadGroup",
    metadata: { name: o.name, namespace: o.namespace },
    spec: { metadata, template },
  });
  const errors = validateText(yaml, "<generated>").issues.filter((i) => i.severity === "error");
  if (errors.length > 0) throw new Error(errors.map(formatIssue).join("\n"));
  return yaml;
}

/** Builds `workload group create`. */
export function groupCreateCommand(io: CliIo): CommandUnknownOpts {
  return new Command("create")
    .description(
      "Create a WorkloadGroup YAML (to stdout) for VMs and other workloads outside the orchestrator",
    )
    .requiredOption("--name <name>", "the group's name")
    .option(
      "-a, --annotations <key=value>",
      "annotations of the workloads, comma-separated, repeatable",
      collectStrings,
      new Array<string>(),
    )
    .option(
      "-l, --labels <key=value>",
      "labels of the workloads, comma-separated, repeatable",
      collectStrings,
      new Array<string>(),
    )
    .option(
      "-p, --ports <name=port>",
      "named ports, comma-separated, repeatable",
      collectStrings,
      new Array<string>(),
    )
    .option("-s, --serviceAccount <name>", "service account of the workloads", "default")
    .option("--network <network>", "L3 network of the workloads' endpoints")
    .option("--locality <locality>", "locality, region/zone/subzone")
    .action((opts, cmd) => {
      const namespace = globalOptions(cmd).namespace;
      if (!namespace) throw new Error("workload group create needs the group's namespace: -n <namespace>");
      const ports: Record<string, number> = {};
      for (const [k, v] of Object.entries(keyValues("--ports", opts.ports))) {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1 || n > 65535) {
          throw new Error(`--ports: "${k}=${v}": ${v} is not a port`);
        }
        ports[k] = n;
      }
      io.stdout(workloadGroupYaml({
        name: opts.name,
        namespace,
        labels: keyValues("--labels", opts.labels),
        annotations: keyValues("--annotations", opts.annotations),
        ports,
        serviceAccount: opts.serviceAccount,
        network: opts.network,
        locality: opts.locality,
      }));
    });
}
