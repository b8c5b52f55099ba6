/**
 * `lab down` ends every process of the lab, also those that a process being ended starts on its way
 * out (the Kubernetes lab's node agent, mid-pass when SIGTERM comes, starts a pod's processes): none
 * may outlive its deleted network namespace. Lab name prefix `hd` (halfclose); no addresses, so no
 * subnet (10.217.0.0/16 is this file's should it need one).
 */
import assert from "node:assert/strict";
import { labDown, labUnavailable } from "./mod.ts";
import { listNetns, mustRun, netnsPids } from "./host.ts";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

/** The pids of every process in the network namespace `ns` (`net:[inode]`), named or not. */
async function pidsIn(ns: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    const link = await Deno.readLink(`/proc/${e.name}/ns/net`).catch(() => "");
    if (link === ns) pids.push(Number(e.name));
  }
  return pids;
}

Deno.test(requires(labUnavailable(), {
  name: "lab down: a process started by one being ended is ended too, before its namespace goes",
  async fn() {
    const name = `hd${Deno.pid}`;
    const netns = `${name}_node`;
    await mustRun("ip", ["netns", "add", netns]);
    const ns = `net:[${(await mustRun("stat", ["-L", "-c", "%i", `/run/netns/${netns}`])).trim()}]`;
    let left: number[] = [];
    try {
      // On SIGTERM it starts a detached sleeper in its namespace, then exits: as the node agent does
      // when a pass that starts a pod is under way.
      const agent = new Deno.Command("ip", {
        args: [
          "netns",
          "exec",
          netns,
          "sh",
          "-c",
          'trap "setsid sleep 300 </dev/null >/dev/null 2>&1 & exit 0" TERM; while :; do sleep 0.05; done',
        ],
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
      await within(
        (async () => {
          while ((await netnsPids(netns)).length === 0) await new Promise((r) => setTimeout(r, 20));
        })(),
        5000,
        "the agent in its namespace",
      );
      const report = await labDown(name);
      await agent.status;
      left = await pidsIn(ns);
      assert.deepEqual(left, [], "no process outlives the lab's namespaces");
      assert.deepEqual(report.netns, [netns]);
      assert.ok(report.processes >= 2, `ended ${report.processes} processes (the agent, then its sleeper)`);
      assert.deepEqual((await listNetns()).filter((n) => n.startsWith(`${name}_`)), []);
    } finally {
      // What the lab left (only when the test fails), then the namespace if it is still there.
      for (const pid of left.length > 0 ? left : await pidsIn(ns)) Deno.kill(pid, "SIGKILL");
      if ((await listNetns()).includes(netns)) await mustRun("ip", ["netns", "delete", netns]);
    }
  },
}));
