/**
 * The lab on the real host (root): up, exec with service names and capture, apply with validation,
 * status, down; and down after `lab up` was killed half-way, with and without a readable state file.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { InputError, labApply, labDelete, labDown, labStatus, labUnavailable, labUp, run } from "./mod.ts";
import { execArgv, findWorkload } from "../../shared/internal/lab/exec.ts";
import { listNetns, netnsPids } from "./host.ts";
import { labPaths } from "../../shared/internal/lab/state.ts";
import { requires } from "../../shared/internal/testing/prerequisites.ts";

const unavailable = labUnavailable();

const TOPOLOGY = `namespaces:
  - {name: foo, injection: enabled}
  - {name: legacy, injection: disabled}
workloads:
  - name: web
    namespace: foo
    command: [/usr/bin/python3, -m, http.server, --bind, "$(BIND_IP)", "8080"]
    containerPorts: [8080]
    services: [{name: web, ports: [{name: http, port: 80, targetPort: 8080}]}]
  - {name: client, namespace: legacy, command: [sleep, infinity]}
`;

async function leftovers(name: string): Promise<string[]> {
  const netns = (await listNetns()).filter((n) => n.startsWith(`${name}_`));
  const etc: string[] = [];
  try {
    for await (const e of Deno.readDir("/etc/netns")) if (e.name.startsWith(`${name}_`)) etc.push(e.name);
  } catch {
    // none
  }
  let dir: string[] = [];
  try {
    await Deno.stat(labPaths(name).dir);
    dir = [labPaths(name).dir];
  } catch {
    // gone
  }
  return [...netns, ...etc.map((e) => `/etc/netns/${e}`), ...dir];
}

async function inWorkload(lab: string, ref: string, command: string[]) {
  const [cmd, ...args] = execArgv(await findWorkload(lab, ref), command);
  return await run(cmd, args);
}

Deno.test(requires(unavailable, {
  name: "lab: up, exec (names, DNAT to the target port, sidecar capture), apply, status, down",
  async fn() {
    const name = `lt${Deno.pid}`;
    const dir = await Deno.makeTempDir();
    const file = join(dir, "topology.yaml");
    await Deno.writeTextFile(file, TOPOLOGY);
    try {
      const state = await labUp(file, { name, subnet: "10.252.0.0/24" });
      assert.equal(state.phase, "up");
      // Without a sidecar: the service name resolves to the VIP, DNAT reaches 8080 behind port 80.
      const legacy = await inWorkload(name, "legacy/client", [
        "curl",
        "-sS",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{remote_ip}",
        "--max-time",
        "5",
        "http://web.foo:80/",
      ]);
      assert.equal(legacy.stdout, "200 10.252.0.128", legacy.stderr);
      // With a sidecar: the request is captured by the sidecar's outbound listener (its counters show it).
      const own = await inWorkload(name, "foo/web", [
        "curl",
        "-sS",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "http://web:80/",
      ]);
      assert.equal(own.stdout, "200", own.stderr);
      const env = await inWorkload(name, "foo/web", ["sh", "-c", "echo $POD_NAMESPACE $BIND_IP"]);
      assert.equal(env.stdout, "foo 127.0.0.1\n");
      const stats = await inWorkload(name, "foo/web", [
        "curl",
        "-s",
        "http://127.0.0.1:15000/stats?filter=_15001",
      ]);
      assert.match(stats.stdout, /listener\.127\.0\.0\.1_15001\.downstream_rq_total: [1-9]/);

      const bad = join(dir, "bad.yaml");
      await Deno.writeTextFile(
        bad,
        "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: x, namespace: foo}\nspec: {mtls: {mode: STRICTT}}\n",
      );
      await assert.rejects(
        () => labApply(name, [bad]),
        (e) => e instanceof InputError && /bad\.yaml:4: .*spec\.mtls\.mode/.test(e.message),
      );
      await assert.rejects(() => Deno.stat(join(labPaths(name).configDir, "bad.yaml")));
      const good = join(dir, "good.yaml");
      await Deno.writeTextFile(good, (await Deno.readTextFile(bad)).replace("STRICTT", "STRICT"));
      assert.deepEqual(await labApply(name, [good]), [join(labPaths(name).configDir, "good.yaml")]);
      const status = (await labStatus(name)).join("\n");
      assert.match(status, /foo\/web 10\.252\.0\.3 .*sidecar running .*\/ready LIVE/);
      assert.match(status, /config: good\.yaml, lab-generated\.yaml/);
      await labDelete(name, ["good.yaml"]);
      await assert.rejects(() => labDelete(name, ["good.yaml"]), /not applied/);
    } finally {
      const report = await labDown(name);
      assert.ok(report.processes >= 4, `ended ${report.processes} processes`);
      await Deno.remove(dir, { recursive: true });
    }
    assert.deepEqual(await leftovers(name), []);
  },
}));

Deno.test(requires(unavailable, {
  name: "lab: down after lab up was killed half-way, and with an unreadable state file",
  async fn() {
    const dir = await Deno.makeTempDir();
    const file = join(dir, "topology.yaml");
    await Deno.writeTextFile(file, TOPOLOGY);
    for (const corrupt of [false, true]) {
      const name = `lc${Deno.pid}${corrupt ? "b" : "a"}`;
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-all",
          new URL("./main.ts", import.meta.url).pathname,
          "up",
          file,
          "--name",
          name,
        ],
        stdout: "null",
        stderr: "null",
      }).spawn();
      // Kill it once meshd runs: namespaces, /etc/netns folders and a process exist, no workload yet.
      const deadline = Date.now() + 30_000;
      const meshdLog = join(labPaths(name).logs, "meshd.log");
      const meshdRuns = async () =>
        (await Deno.stat(meshdLog).then(() => true, () => false)) &&
        (await netnsPids(`${name}_meshd`)).length > 0;
      while (!(await meshdRuns()) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      child.kill("SIGKILL");
      await child.status;
      assert.ok((await leftovers(name)).length >= 4, "the killed lab left things to clean up");
      if (corrupt) await Deno.writeTextFile(labPaths(name).stateFile, '{"name": "x", "netns": [');
      const report = await labDown(name);
      assert.ok(report.processes >= 1, `ended ${report.processes} processes`);
      assert.equal(report.warnings.length, corrupt ? 1 : 0, report.warnings.join("\n"));
      assert.deepEqual(await leftovers(name), []);
    }
    await Deno.remove(dir, { recursive: true });
  },
}));
