/**
 * meshd replicas with leader election, proxy failover (issue 14, item 4, in its own words: "kill the
 * leader under load; a replica takes over, with 0 failed data-path requests"), against the test
 * Kubernetes API server (deploy/lab/kube_api) on this host, joined to the failover network
 * (tests/e2e/meshd_failover_support.ts; namespaces `fk-*`, 10.247.2.0/24) as 10.247.2.1. Two
 * `meshd discovery --kubeconfig` processes (POD_NAME meshd-a and meshd-b, ENABLE_LEADER_ELECTION on by default) read the config, which exists only
 * as objects applied with kubectl (the mesh's own CRDs from deploy/crds), and share one ROOT_CA_DIR.
 * meshd-a starts first and holds the `meshd-leader` Lease (read with kubectl); the proxies use it too (the
 * first address of their list). It is killed with SIGKILL under load (tests/e2e/meshd_failover_scenario.ts):
 * 0 failed requests, the proxies move to meshd-b, an AuthorizationPolicy applied with kubectl after the
 * kill reaches them, they renew at meshd-b, and meshd-b takes the Lease once meshd-a's has expired
 * (istiod's timings: lease 30 s, retry 5 s; a SIGKILLed leader cannot release it).
 *
 * Figures with MESH_TEST_FIGURES=1. About 80 s.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startKubeApi } from "../../deploy/lab/kube_api/mod.ts";
import { labUnavailable } from "../../deploy/lab/mod.ts";
import { commandMissing, httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { figure } from "../../shared/internal/testing/figures.ts";
import { kubectl } from "../integration/meshd/kube_support.ts";
import { eventually } from "./e2e_support.ts";
import { failoverNetwork, type NetnsProcess } from "./meshd_failover_support.ts";
import { config, failoverUnderLoad, meshdReady, startMeshd } from "./meshd_failover_scenario.ts";

const net = failoverNetwork("fk", 2);

const CRDS = new URL("../../deploy/crds", import.meta.url).pathname;
const NAMESPACES = ["mesh-system", "foo"].map((n) =>
  `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${n}}\n`
);

/** The scenario's YAML in the mesh's own API groups (the CRDs an operator installs). */
const meshGroups = (yaml: string) =>
  yaml.replace(/^apiVersion: (\w+)\.istio\.io\//gm, "apiVersion: $1.mesh.io/");

const missing = labUnavailable() ?? httpbinMissing() ?? commandMissing("hey") ?? commandMissing("curl") ??
  commandMissing("kubectl");

Deno.test(requires(missing, {
  name:
    "meshd failover (Kubernetes, leader election): SIGKILL of the leader in use under load; 0 failed requests, the other replica serves and takes the Lease",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "meshd-failover-kube-e2e-" });
    await Deno.chmod(dir, 0o755);
    await net.create(true);
    const api = await startKubeApi({
      hostname: net.hostAddress,
      extraNames: [net.hostAddress],
      dir: join(dir, "kube"),
    });
    const procs: NetnsProcess[] = [];
    const holder = async () => {
      const yaml = await kubectl(api.kubeconfig, [
        "get",
        "lease",
        "meshd-leader",
        "-n",
        "mesh-system",
        "-o",
        "yaml",
      ])
        .catch(() => "");
      return /holderIdentity: (\S*)/.exec(yaml)?.[1] ?? "";
    };
    try {
      await kubectl(api.kubeconfig, ["apply", "-f", CRDS]);
      await kubectl(api.kubeconfig, ["apply", "-f", "-"], NAMESPACES.join("---\n"));
      await kubectl(api.kubeconfig, ["apply", "-f", "-"], meshGroups(config(net)));
      const source = ["--kubeconfig", api.kubeconfig];
      const a = startMeshd(net.hosts.meshdA, dir, source, { POD_NAME: "meshd-a" });
      procs.push(a);
      await meshdReady("meshd A", a);
      await eventually("meshd-a to hold the Lease", async () => {
        const h = await holder();
        return h === "meshd-a" ? undefined : `holder ${JSON.stringify(h)}`;
      }, 15_000);
      const b = startMeshd(net.hosts.meshdB, dir, source, { POD_NAME: "meshd-b" });
      procs.push(b);
      await meshdReady("meshd B", b);
      const result = await failoverUnderLoad({
        net,
        dir,
        a,
        b,
        loadSeconds: 60,
        apply: async (_name, yaml) =>
          void await kubectl(api.kubeconfig, ["apply", "-f", "-"], meshGroups(yaml)),
        afterKill: async (killedAt) => {
          assert.equal(await holder(), "meshd-a", "the killed leader's Lease is still held");
          await eventually("meshd-b to take the Lease", async () => {
            const h = await holder();
            return h === "meshd-b" ? undefined : `holder ${JSON.stringify(h)}`;
          }, 50_000);
          return `; the Lease taken by meshd-b ${Date.now() - killedAt} ms after the SIGKILL`;
        },
        procs,
      });
      assert.match(b.output(), /meshd-b is now the leader/);
      figure(`meshd failover (Kubernetes, leader killed): ${result}`);
    } catch (e) {
      for (const p of procs) console.error(p.output().slice(-2500));
      throw e;
    } finally {
      for (const p of procs) await p.kill();
      await api.stop();
      await net.remove();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
}));
