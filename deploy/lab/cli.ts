/**
 * The `lab` program (`./dev lab <command>`): up, apply, delete, exec, port-forward, kubectl, config,
 * status, down. Every command
 * takes `--name` (MESH_LAB_NAME, default `mesh`); `up` also takes `--subnet` (MESH_LAB_SUBNET,
 * default 10.213.0.0/24).
 *
 * @module
 */
import { Command, Option } from "@commander-js/extra-typings";
import { labApply, labDelete } from "./config_files.ts";
import { labDown } from "./down.ts";
import { labExec } from "../../shared/internal/lab/exec.ts";
import { labPortForward } from "./port_forward_command.ts";
import { DEFAULT_LAB_NAME, DEFAULT_LAB_SUBNET, labNames } from "../../shared/internal/lab/naming.ts";
import { labStatus } from "./status.ts";
import { labUp } from "./up.ts";
import { isKubeLab, labKubectl, labObjectsYaml } from "./kube_config.ts";
import { planLab } from "../../shared/internal/lab/plan.ts";
import { parseTopology } from "../../shared/internal/lab/topology.ts";

/** Where the program writes, and its environment. */
export interface LabIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string>;
}

/**
 * Runs the lab program with `args` (without the program name).
 *
 * @returns the exit code: 0 done, 1 failed, 2 bad usage; `exec` returns the command's
 */
export async function runLab(args: string[], io: LabIo): Promise<number> {
  let code = 0;
  const name = io.env.MESH_LAB_NAME || DEFAULT_LAB_NAME;
  const nameOption = [
    "--name <name>",
    "lab name: prefix of its network namespaces (env MESH_LAB_NAME)",
    name,
  ] as const;
  const line = (t: string) => io.stdout(t + "\n");
  const program = new Command("lab")
    .description("A local mesh lab: meshd and workloads, each in its own network namespace (needs root)")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .enablePositionalOptions();
  program.command("up")
    .description(
      "Make the network, start meshd, the workloads, their sidecars and gateways; wait until all are ready",
    )
    .argument(
      "[topology]",
      "topology YAML (deploy/lab/README.md); with --kubernetes default deploy/lab/kubernetes.yaml",
    )
    .option(...nameOption)
    .option(
      "--subnet <cidr>",
      "an IPv4 /24 for the lab (env MESH_LAB_SUBNET)",
      io.env.MESH_LAB_SUBNET || DEFAULT_LAB_SUBNET,
    )
    .option("--keep", "keep what was made when start-up fails (then: lab down)")
    .addOption(
      new Option(
        "--config-source <source>",
        "files: meshd --configDir; kube: the test Kubernetes API server (deploy/lab/kube_api) in meshd's " +
          "namespace, the CRDs and the lab's config applied only with kubectl, meshd --kubeconfig " +
          "(not a Kubernetes node: no pods, no kubelet)",
      ).choices(["files", "kube"] as const).default("files" as const),
    )
    .option(
      "--kubernetes",
      "the lab as a Kubernetes node: --config-source kube, meshd's webhooks registered, and the node agent " +
        "(deploy/lab/node_agent) runs the pods applied with kubectl (partial: see its README)",
    )
    .action(async (topology, o) => {
      if (topology === undefined && !o.kubernetes) program.error("lab up: give a topology file");
      const state = await labUp(topology ?? "deploy/lab/kubernetes.yaml", {
        kubernetes: o.kubernetes,
        name: o.name,
        subnet: o.subnet,
        keepOnFailure: o.keep,
        configSource: o.configSource,
        log: line,
      });
      line(`lab ${state.name} is up; lab status --name ${state.name}; lab down --name ${state.name}`);
    });
  program.command("apply")
    .description("Validate files and put them into meshd's config directory; kube mode: kubectl apply -f")
    .argument("<files...>")
    .option(...nameOption)
    .action(async (files, o) => {
      const kube = await isKubeLab(o.name);
      for (const p of await labApply(o.name, files)) line(kube ? p : `applied ${p}`);
    });
  program.command("delete")
    .description("Take files (by base name) out of meshd's config directory; kube mode: kubectl delete -f")
    .argument("<files...>")
    .option(...nameOption)
    .action(async (files, o) => {
      const kube = await isKubeLab(o.name);
      for (const p of await labDelete(o.name, files)) line(kube ? p : `deleted ${p}`);
    });
  program.command("exec")
    .description("Run a command in a workload's network namespace, as kubectl exec in its pod")
    .argument("<workload>", "<namespace>/<workload>")
    .argument("<command...>", "after --")
    .option(...nameOption)
    .passThroughOptions()
    .action(async (workload, command, o) => {
      code = await labExec(o.name, workload, command[0] === "--" ? command.slice(1) : command);
    });
  program.command("port-forward")
    .description(
      "Forward local ports to meshd or a workload, as kubectl port-forward: 127.0.0.1:<local> here to " +
        "127.0.0.1:<remote> in the target's network namespace; until SIGINT or SIGTERM",
    )
    .argument("<target>", "meshd or <namespace>/<workload>")
    .argument(
      "<ports...>",
      "[<local>:]<remote>; a lone <remote> listens on the same port, :<remote> on a free one",
    )
    .option(...nameOption)
    .option("--address <ip>", "local address to listen on", "127.0.0.1")
    .option(
      "--pod-ip",
      "dial the target's lab address instead of its 127.0.0.1 (through the sidecar's inbound)",
    )
    .action(async (target, ports, o) => {
      await labPortForward(o.name, target, ports, {
        address: o.address,
        podIp: Boolean(o.podIp),
        log: line,
        error: (t) => io.stderr(t + "\n"),
      });
    });
  program.command("kubectl")
    .description(
      "Run kubectl against the lab's API server (lab up --config-source kube), inside meshd's namespace",
    )
    .argument("<args...>", "kubectl's arguments, after --")
    .option(...nameOption)
    .passThroughOptions()
    .action(async (args, o) => {
      const argv = args[0] === "--" ? args.slice(1) : args;
      // `-f -` reads this command's standard input, as kubectl would.
      const stdin = argv.some((a, i) =>
          a === "-" && ["-f", "--filename"].includes(argv[i - 1]) || a === "--filename=-"
        )
        ? await new Response(Deno.stdin.readable).text()
        : undefined;
      const r = await labKubectl(o.name, argv, { stdin });
      io.stdout(r.stdout);
      io.stderr(r.stderr);
      code = r.code;
    });
  program.command("config")
    .description(
      "Print what lab up --config-source kube applies after the CRDs: Namespaces, then the ServiceEntries, " +
        "WorkloadGroups and WorkloadEntries of the topology (lab up writes the same into --configDir)",
    )
    .argument("<topology>", "topology YAML (deploy/lab/README.md)")
    .option(...nameOption)
    .option(
      "--subnet <cidr>",
      "the lab's IPv4 /24 (env MESH_LAB_SUBNET)",
      io.env.MESH_LAB_SUBNET || DEFAULT_LAB_SUBNET,
    )
    .action(async (topology, o) => {
      const parsed = parseTopology(await Deno.readTextFile(topology), topology);
      io.stdout(labObjectsYaml(planLab(labNames(o.name, o.subnet), parsed)));
    });
  program.command("status")
    .description("Show the lab's processes, addresses and config files")
    .option(...nameOption)
    .action(async (o) => {
      for (const l of await labStatus(o.name)) line(l);
    });
  program.command("down")
    .description("Remove every namespace, link, process and file of the lab, even after a crash")
    .option(...nameOption)
    .action(async (o) => {
      const r = await labDown(o.name);
      for (const w of r.warnings) io.stderr(`warning: ${w}\n`);
      line(
        `lab ${o.name}: ended ${r.processes} processes, deleted ${r.netns.length} namespaces, ` +
          `${r.etcNetns.length} /etc/netns folders${r.stateDir ? ", the state directory" : ""}`,
      );
    });
  for (const c of program.commands) {
    c.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  }
  try {
    await program.parseAsync(args, { from: "user" });
  } catch (e) {
    const ce = e as { code?: string; exitCode?: number };
    if (typeof ce.code === "string" && ce.code.startsWith("commander.")) {
      return ce.code === "commander.helpDisplayed" || ce.code === "commander.version" ? 0 : 2;
    }
    io.stderr(`error: ${(e as Error).message}\n`);
    return 1;
  }
  return code;
}
