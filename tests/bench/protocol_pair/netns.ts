/**
 * The benchmark's own network namespace (root): loopback, a veth pair whose one end holds
 * `10.227.0.1/24` so that the service range routes, and the sidecar's capture in miniature: nat OUTPUT
 * REDIRECTs TCP towards the service VIPs (`10.227.0.128/25`) to the client proxy's outbound port, as
 * the lab and Istio's init container do. The whole run (meshd, both pairs, the apps and the load
 * generators) happens inside it, so direct, HAProxy and mesh share one network stack.
 *
 * @module
 */
import { run } from "../pair_support.ts";

/** The first service VIP (the ServiceEntry's `addresses`); the range `${VIP_RANGE}` is redirected. */
export const SERVICE_VIP = "10.227.0.128";
const VIP_RANGE = "10.227.0.128/25";

/** What the re-executed run finds in its environment: the namespace's name and the redirect's port. */
export interface BenchNetns {
  name: string;
  outboundPort: number;
}

/** The namespace this process runs in (set by {@link runInNetns}), or undefined. */
export function currentNetns(): BenchNetns | undefined {
  const name = Deno.env.get("BENCH_NETNS");
  const port = Deno.env.get("BENCH_OUTBOUND_PORT");
  return name && port ? { name, outboundPort: Number(port) } : undefined;
}

/**
 * Makes namespace `ppb<pid>`, re-runs this script inside it (`ip netns exec`) with the same arguments,
 * its stdout and stderr passed on, and removes the namespace; returns the child's exit code.
 */
export async function runInNetns(script: string, args: string[], outboundPort: number): Promise<number> {
  const name = `ppb${Deno.pid}`;
  await run("ip", ["netns", "add", name]);
  try {
    const ip = (...a: string[]) => run("ip", ["-n", name, ...a]);
    await ip("link", "set", "lo", "up");
    await ip("link", "add", "b0", "type", "veth", "peer", "name", "b1");
    await ip("addr", "add", "10.227.0.1/24", "dev", "b0");
    await ip("link", "set", "b0", "up");
    await ip("link", "set", "b1", "up");
    await run("ip", [
      ..."netns exec".split(" "),
      name,
      ..."iptables -w -t nat -A OUTPUT -p tcp -d".split(" "),
      VIP_RANGE,
      ..."-j REDIRECT --to-ports".split(" "),
      String(outboundPort),
    ]);
    const child = new Deno.Command("ip", {
      args: ["netns", "exec", name, Deno.execPath(), "run", "-A", script, ...args],
      env: { BENCH_NETNS: name, BENCH_OUTBOUND_PORT: String(outboundPort) },
      stdin: "null",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    return (await child.status).code;
  } finally {
    await run("ip", ["netns", "del", name]).catch(() => {});
  }
}
