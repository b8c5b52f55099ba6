/**
 * meshd replicas and proxy failover (issue 14, item 4), with --configDir, in network namespaces (subnet
 * 10.247.1.0/24, namespaces `fo-*`, tests/e2e/meshd_failover_support.ts): two `meshd discovery`
 * processes on two hosts serve the same config directory and share one ROOT_CA_DIR (one root, both
 * issue under it, each with its own serving certificate for `meshd.mesh-system.svc`); a client sidecar (sleep) and a server
 * sidecar in front of Debian's httpbin (gunicorn), STRICT mutual TLS, are given both meshd addresses;
 * `hey` sends a steady stream of requests through them from the sleep host, on kept-alive connections
 * and on a new connection per request. The meshd both proxies use is killed with SIGKILL; then
 * (tests/e2e/meshd_failover_scenario.ts):
 *
 * - every request succeeds (0 errors, only 200s);
 * - both proxies reconnect to the other meshd (its /debug/syncz lists them);
 * - a config change made after the kill (an AuthorizationPolicy denying `/anything/denied`) reaches
 *   them: the survivor serves;
 * - both proxies renew their 40 s certificates at the survivor (its log names the issue).
 *
 * Figures (requests sent/failed, time to reconnect, time for the change to arrive) are printed with
 * figure() (MESH_TEST_FIGURES=1), not asserted. About 60 s.
 *
 * @module
 */
import { join } from "node:path";
import { labUnavailable } from "../../deploy/lab/mod.ts";
import { commandMissing, httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { figure } from "../../shared/internal/testing/figures.ts";
import { failoverNetwork, type NetnsProcess } from "./meshd_failover_support.ts";
import {
  config as meshConfig,
  failoverUnderLoad,
  meshdReady,
  startMeshd,
} from "./meshd_failover_scenario.ts";

const net = failoverNetwork("fo", 1);

Deno.test(requires(labUnavailable() ?? httpbinMissing() ?? commandMissing("hey") ?? commandMissing("curl"), {
  name:
    "meshd failover (--configDir): SIGKILL of the meshd in use under load; 0 failed requests, proxies move to the other replica",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "meshd-failover-e2e-" });
    await Deno.chmod(dir, 0o755);
    const config = join(dir, "config");
    await Deno.mkdir(config);
    await Deno.writeTextFile(join(config, "mesh.yaml"), meshConfig(net));
    await net.create();
    const procs: NetnsProcess[] = [];
    try {
      const a = startMeshd(net.hosts.meshdA, dir, ["--configDir", config]);
      procs.push(a);
      await meshdReady("meshd A", a);
      const b = startMeshd(net.hosts.meshdB, dir, ["--configDir", config]);
      procs.push(b);
      await meshdReady("meshd B", b);
      const result = await failoverUnderLoad({
        net,
        dir,
        a,
        b,
        loadSeconds: 50,
        apply: (name, yaml) => Deno.writeTextFile(join(config, name), yaml),
        procs,
      });
      figure(`meshd failover (--configDir): ${result}`);
    } catch (e) {
      for (const p of procs) console.error(p.output().slice(-2500));
      throw e;
    } finally {
      for (const p of procs) await p.kill();
      await net.remove();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
}));
