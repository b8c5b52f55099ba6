/**
 * meshctl's orchestrator mode for the local lab (`--lab <name>`, env MESHCTL_LAB): istioctl reaches
 * istiod and each pod's Envoy admin through Kubernetes port-forwards it opens and closes itself;
 * meshctl does the same through the lab's port forwarding (shared/internal/lab/port_forward.ts), because
 * nothing of the lab is in the host's network namespace. meshd's debug interface (127.0.0.1:8080 in
 * its namespace) stands in for `--debug-address` (unless that is given on the command line), and a
 * proxy's admin port is forwarded from its workload's namespace; `--xds-address` naming meshd is
 * forwarded too, with the lab's roots and a token of its CA. A target names a lab workload,
 * `<workload>.<namespace>` (the pod's name in Istio terms), or what meshd lists (`<registered
 * name>.<namespace>`). Needs root, as the lab does.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { join } from "node:path";
import { upState } from "../shared/internal/lab/exec.ts";
import { type LabPlan, MESHD_HOST, type PlannedWorkload } from "../shared/internal/lab/plan.ts";
import { openPortForward, type PortForward } from "../shared/internal/lab/port_forward.ts";
import { labPaths } from "../shared/internal/lab/state.ts";
import { BootstrapTokenIssuer } from "../shared/internal/ca/bootstrap_tokens.ts";
import { DEFAULT_XDS_PORT, XDS_TOKEN_ENV } from "./debug_flags.ts";
import type { MeshdDebugSource } from "./meshd_client.ts";
import { type ConnectedProxy, findProxy, type Target } from "./proxy_target.ts";

/** The environment variable that gives `--lab`. */
export const LAB_ENV = "MESHCTL_LAB";

/** meshd's debug port inside the lab: meshd's --httpAddr default (:8080), which `lab up` keeps. */
export const LAB_MESHD_DEBUG_PORT = 8080;

function instanceIps(proxy: ConnectedProxy): string[] {
  const ips = proxy.metadata.INSTANCE_IPS;
  return typeof ips === "string" ? ips.split(",").map((s) => s.trim()) : [];
}

/** The forwards of one meshctl run into lab `lab`, opened on first use and closed by {@link close}. */
export class LabConnector {
  readonly #forwards = new Map<string, Promise<PortForward>>();
  #plan?: Promise<LabPlan>;
  #tokenDir?: string;

  /** @param lab the lab's name (`lab up --name`) */
  constructor(readonly lab: string) {}

  #labPlan(): Promise<LabPlan> {
    this.#plan ??= upState(this.lab).then((s) => {
      if (!s.plan) throw new Error(`lab ${this.lab}: its state has no plan (lab up did not get far)`);
      return s.plan;
    });
    return this.#plan;
  }

  /** `127.0.0.1:<local>` forwarded to `target` (default `127.0.0.1:<port>`) in `netns`, once per run. */
  #forward(netns: string, port: number, target = `127.0.0.1:${port}`): Promise<PortForward> {
    const key = `${netns} ${target}`;
    let f = this.#forwards.get(key);
    if (f === undefined) {
      f = openPortForward(netns, target);
      this.#forwards.set(key, f);
    }
    return f;
  }

  /**
   * The local address of meshd's debug interface.
   *
   * @throws Error when the lab is not up or the forward cannot be opened
   */
  async meshdDebugAddress(): Promise<string> {
    const plan = await this.#labPlan();
    return (await this.#forward(plan.meshd.netns, LAB_MESHD_DEBUG_PORT)).localAddress;
  }

  /**
   * `--xds-address` inside the lab: when its host is meshd's (`meshd.mesh-system.svc`, with
   * `.cluster.local`, or meshd's lab address), the local end of a forward to that port of meshd, and the
   * name meshd's certificate carries; else undefined (an address outside the lab is used as given).
   *
   * @throws Error when the lab is not up or the forward cannot be opened
   */
  async meshdXdsAddress(address: string): Promise<{ address: string; authority: string } | undefined> {
    const colon = address.lastIndexOf(":");
    const hasPort = colon > 0 && /^\d+$/.test(address.slice(colon + 1));
    const host = hasPort ? address.slice(0, colon) : address;
    const port = hasPort ? Number(address.slice(colon + 1)) : DEFAULT_XDS_PORT;
    const plan = await this.#labPlan();
    if (![MESHD_HOST, `${MESHD_HOST}.cluster.local`, plan.meshd.address].includes(host)) return undefined;
    const f = await this.#forward(plan.meshd.netns, port, `${plan.meshd.address}:${port}`);
    return { address: f.localAddress, authority: MESHD_HOST };
  }

  /**
   * A bootstrap token of the lab's CA for the root namespace (`mesh-system/meshctl`), in a file that
   * {@link close} removes: the lab's stand-in for the orchestrator token istioctl gets by default.
   */
  async meshdToken(): Promise<string> {
    const paths = labPaths(this.lab);
    const issuer = await BootstrapTokenIssuer.open(paths.caDir, { audiences: ["mesh-ca"], create: false });
    const token = await issuer.issue({
      namespace: "mesh-system",
      serviceAccount: "meshctl",
      durationSeconds: 600,
    });
    this.#tokenDir ??= await Deno.makeTempDir({ prefix: "meshctl-lab-" });
    const file = join(this.#tokenDir, "token");
    await Deno.writeTextFile(file, token.token, { mode: 0o600 });
    return file;
  }

  /** The lab's root certificate folder (`root-cert.pem`), as `--cert-dir` reads it. */
  rootCertDir(): string {
    return labPaths(this.lab).dir;
  }

  /**
   * Finds a target's proxy: what meshd lists under that name, else the proxy of the lab workload
   * `<namespace>/<name>` (the one connected from the workload's address).
   *
   * @throws Error naming the target, the lab's workloads and meshd's connected proxies
   */
  async findProxy(client: MeshdDebugSource, target: Target): Promise<ConnectedProxy> {
    let registryError: Error;
    try {
      return await findProxy(client, target);
    } catch (e) {
      registryError = e as Error;
    }
    const plan = await this.#labPlan();
    const w = plan.workloads.find((w) => w.namespace === target.namespace && w.name === target.name);
    if (w === undefined) {
      throw new Error(
        `${registryError.message}; nor is it a workload of lab ${this.lab} (workloads: ${
          plan.workloads.map((w) => `${w.name}.${w.namespace}`).join(", ")
        })`,
      );
    }
    const connections = await client.json<ConnectedProxy[]>("/debug/connections");
    const found = connections.find((c) => instanceIps(c).includes(w.address));
    if (found === undefined) {
      throw new Error(
        `proxy ${target.name}.${target.namespace}: lab ${this.lab} workload ${w.namespace}/${w.name} (${w.address}) ` +
          (w.sidecar
            ? "has no proxy connected to meshd"
            : `has no sidecar (namespace ${w.namespace} has injection disabled)`),
      );
    }
    return found;
  }

  /** The lab workload a connected proxy runs beside (by its INSTANCE_IPS). */
  async #workloadOf(proxy: ConnectedProxy): Promise<PlannedWorkload> {
    const plan = await this.#labPlan();
    const ips = instanceIps(proxy);
    const w = plan.workloads.find((w) => ips.includes(w.address));
    if (w === undefined) {
      throw new Error(
        `proxy ${proxy.proxy} (workload ${proxy.workload}, addresses ${ips.join(", ") || "none"}) ` +
          `is not in lab ${this.lab}`,
      );
    }
    return w;
  }

  /**
   * The local address forwarded to a proxy's admin port, and a description for error messages.
   *
   * @throws Error when the proxy is not one of the lab's, or the forward cannot be opened
   */
  async adminAddress(proxy: ConnectedProxy, port: number): Promise<{ address: string; via: string }> {
    const w = await this.#workloadOf(proxy);
    const f = await this.#forward(w.netns, port);
    return { address: f.localAddress, via: `lab ${this.lab}: forwarded to 127.0.0.1:${port} in ${w.netns}` };
  }

  /** Closes every forward this run opened. */
  async close(): Promise<void> {
    const all = [...this.#forwards.values()];
    this.#forwards.clear();
    await Promise.all(all.map((f) => f.then((x) => x.close(), () => {})));
    if (this.#tokenDir !== undefined) await Deno.remove(this.#tokenDir, { recursive: true });
    this.#tokenDir = undefined;
  }
}

const connectors = new WeakMap<CommandUnknownOpts, LabConnector>();

function root(cmd: CommandUnknownOpts): CommandUnknownOpts {
  let c = cmd;
  while (c.parent) c = c.parent;
  return c;
}

/** The lab connector of the run a command belongs to, when `--lab` was given. */
export function labConnectorOf(cmd: CommandUnknownOpts): LabConnector | undefined {
  return connectors.get(root(cmd));
}

function needsMeshd(chain: CommandUnknownOpts[]): CommandUnknownOpts | undefined {
  const holder = chain.find((c) => c.options.some((o) => o.attributeName() === "debugAddress"));
  if (holder === undefined || holder.getOptionValueSource("debugAddress") === "cli") return undefined;
  // A saved config dump or policy files (-f) need no meshd.
  const file = chain.map((c) => c.getOptionValue("file") as unknown).find((v) => v !== undefined);
  if (typeof file === "string" || (Array.isArray(file) && file.length > 0)) return undefined;
  return holder;
}

/**
 * Adds the global `--lab <name>` flag to `program` and, before each action, when it is given, a
 * connector for the run and meshd's forwarded debug address as `--debug-address` (unless given on the
 * command line, or the command reads files only).
 */
export function addLabMode(program: CommandUnknownOpts): void {
  program.option(
    "--lab <name>",
    `the orchestrator is the local lab <name> (deploy/lab): reach meshd and proxies through port-forwards ` +
      `meshctl opens itself (needs root); --xds-address meshd.mesh-system.svc then means the lab's meshd, ` +
      `with a token of the lab's CA; env ${LAB_ENV}`,
    Deno.env.get(LAB_ENV) || undefined,
  );
  program.hook("preAction", async (top, action) => {
    const lab = (top.opts() as { lab?: string }).lab;
    if (!lab) return;
    const connector = new LabConnector(lab);
    connectors.set(top, connector);
    const chain: CommandUnknownOpts[] = [];
    for (let c: CommandUnknownOpts | null = action; c; c = c.parent) chain.push(c);
    const xds = chain.find((c) => c.getOptionValueSource("xdsAddress") === "cli");
    if (xds) {
      await useLabXds(connector, xds);
      return;
    }
    const holder = needsMeshd(chain);
    if (holder) holder.setOptionValueWithSource("debugAddress", await connector.meshdDebugAddress(), "env");
  });
}

/**
 * `--xds-address` naming meshd in the lab: the forwarded address, `--authority` meshd's name (unless given
 * or `--plaintext`), and, unless `--cert-dir` or a token is given, the lab's root certificate and a token
 * of the lab's CA for the root namespace.
 */
async function useLabXds(connector: LabConnector, cmd: CommandUnknownOpts): Promise<void> {
  const opts = cmd.opts() as Record<string, unknown>;
  const inLab = await connector.meshdXdsAddress(String(opts.xdsAddress));
  if (inLab === undefined) return;
  cmd.setOptionValueWithSource("xdsAddress", inLab.address, "env");
  if (opts.plaintext !== true && opts.authority === undefined) {
    cmd.setOptionValueWithSource("authority", inLab.authority, "env");
  }
  if (opts.certDir !== undefined || opts.xdsTokenFile !== undefined || Deno.env.get(XDS_TOKEN_ENV)) {
    return;
  }
  if (opts.plaintext !== true && opts.insecure !== true) {
    cmd.setOptionValueWithSource("certDir", connector.rootCertDir(), "env");
  }
  cmd.setOptionValueWithSource("xdsTokenFile", await connector.meshdToken(), "env");
}

/** Closes the forwards of a run of `program` (after its action, also a failed one). */
export async function closeLabMode(program: CommandUnknownOpts): Promise<void> {
  await connectors.get(program)?.close();
  connectors.delete(program);
}
