/**
 * `lab status`: what a lab holds and whether each part runs: meshd, every workload's command and
 * sidecar (its `/ready`), addresses, service VIPs and the config files applied; plus the other
 * labs on this host (by their hub namespace), so that leftovers of a crash can be found.
 *
 * @module
 */
import { isAlive, listNetns, run } from "./host.ts";
import { SIDECAR_ADMIN_PORT } from "../../shared/internal/lab/plan.ts";
import { loadNodePods } from "../../shared/internal/lab/node_pods.ts";
import { labPaths, loadState } from "../../shared/internal/lab/state.ts";
import { KUBE_API_PORT, labKubeconfig } from "./kube_config.ts";

/** The status as text lines. */
export async function labStatus(name: string, options: { dir?: string } = {}): Promise<string[]> {
  const paths = labPaths(name, options.dir);
  const state = await loadState(paths);
  const others = (await listNetns()).filter((n) => n.endsWith("_hub")).map((n) => n.slice(0, -4));
  const lines: string[] = [];
  if (state === undefined) lines.push(`lab ${name}: not up (no ${paths.stateFile})`);
  else if (typeof state === "string") lines.push(`lab ${name}: ${state}`);
  else {
    lines.push(`lab ${name}: ${state.phase}, subnet ${state.subnet}, topology ${state.topologyFile}`);
    lines.push(`  state: ${paths.dir}`);
    const proc = (role: string) => state.processes.find((p) => p.role === role);
    const alive = async (role: string) => {
      const p = proc(role);
      return p === undefined
        ? "not started"
        : (await isAlive(p.pid))
        ? `running (pid ${p.pid})`
        : `EXITED (log ${p.log})`;
    };
    if (state.plan) {
      lines.push(`  meshd ${state.plan.meshd.address}: ${await alive("meshd")}`);
      for (const w of state.plan.workloads) {
        const role = `${w.namespace}/${w.name}`;
        let sidecar = w.gateway ? "gateway (proxy --type router)" : "no sidecar";
        if (w.sidecar || w.gateway) {
          const r = await run("ip", [
            "netns",
            "exec",
            w.netns,
            "curl",
            "-s",
            "--max-time",
            "1",
            `http://127.0.0.1:${SIDECAR_ADMIN_PORT}/ready`,
          ]);
          const ready = `/ready ${r.stdout.trim() || `unreachable (exit ${r.code})`}`;
          sidecar = w.gateway
            ? `${sidecar}, ${ready}`
            : `sidecar ${await alive(`${role}/sidecar`)}, ${ready}`;
        }
        lines.push(`  ${role} ${w.address} (netns ${w.netns}): ${await alive(role)}; ${sidecar}`);
      }
      for (const s of state.plan.services) {
        const ports = s.ports.map((p) => `${p.port}->${p.targetPort}`).join(", ");
        lines.push(
          `  service ${s.name}.${s.namespace} ${s.vip} ports ${ports} -> ${s.namespace}/${s.workload}`,
        );
      }
    }
    if (state.configSource === "kube") {
      lines.push(
        `  kube-api https://127.0.0.1:${KUBE_API_PORT} in meshd's namespace: ${await alive("kube-api")}`,
      );
      lines.push(
        `  config: from the Kubernetes API (kubeconfig ${
          labKubeconfig(paths)
        }; lab kubectl --name ${name} -- get …)`,
      );
      if (proc("node-agent")) {
        lines.push(`  node agent (log ${proc("node-agent")!.log}): ${await alive("node-agent")}`);
        for (const p of await loadNodePods(paths)) {
          lines.push(
            `  pod ${p.namespace}/${p.name} ${p.address} (netns ${p.netns}): ${
              p.ready ? "Ready" : "not Ready"
            }${p.sidecar ? ", with sidecar" : ""}`,
          );
        }
      }
    } else {
      try {
        const files = [];
        for await (const e of Deno.readDir(paths.configDir)) files.push(e.name);
        lines.push(`  config: ${files.sort().join(", ")}`);
      } catch {
        lines.push(`  config: ${paths.configDir} missing`);
      }
    }
  }
  const rest = others.filter((o) => o !== name);
  if (rest.length > 0) lines.push(`other labs on this host: ${rest.join(", ")}`);
  return lines;
}
