/**
 * `lab port-forward` (root): against a lab state naming a real namespace with a real HTTP server in
 * it, kubectl's lines, a connection through, the end on abort (no relay left); bad specs and unknown
 * targets are errors before anything is opened.
 */
import assert from "node:assert/strict";
import { labUnavailable, netnsPids } from "./host.ts";
import { netnsServer } from "./netns_server_test_support.ts";
import { labNames } from "../../shared/internal/lab/naming.ts";
import { labPortForward } from "./port_forward_command.ts";
import { labPaths, saveState } from "../../shared/internal/lab/state.ts";
import { requires } from "../../shared/internal/testing/prerequisites.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const unavailable = labUnavailable();

Deno.test(requires(unavailable, {
  name: "labPortForward: forwards to a lab workload until aborted; errors name specs and targets",
  async fn() {
    const lab = `pc${Deno.pid}`;
    const netns = `${lab}_foo_web`;
    const dir = await Deno.makeTempDir();
    const paths = labPaths(lab, dir);
    await Deno.mkdir(paths.dir, { recursive: true });
    const names = labNames(lab, "10.248.0.0/24");
    const workload = {
      name: "web",
      namespace: "foo",
      serviceAccount: "default",
      labels: {},
      command: [],
      containerPorts: [8098],
      services: [],
      sidecar: false,
      netns,
      address: "10.248.0.3",
      hubLink: "v1",
    };
    await saveState(
      paths,
      {
        name: lab,
        subnet: names.subnet,
        topologyFile: "t.yaml",
        createdAt: new Date().toISOString(),
        phase: "up",
        plan: {
          lab: names,
          gateway: "10.248.0.1",
          meshd: { netns: `${lab}_meshd`, address: "10.248.0.2", hubLink: "v0" },
          serviceRange: "10.248.0.128/25",
          workloads: [workload],
          services: [],
        },
        netns: [netns],
        etcNetns: [],
        processes: [],
      } as unknown as Parameters<typeof saveState>[1],
    );
    const server = await netnsServer(netns, 8098, dir);
    try {
      const lines: string[] = [];
      const errors: string[] = [];
      const stop = new AbortController();
      let opened!: (line: string) => void;
      const forwarding = new Promise<string>((r) => (opened = r));
      const running = labPortForward(lab, "foo/web", [":8098"], {
        address: "127.0.0.1",
        podIp: false,
        dir,
        signal: stop.signal,
        log: (l) => {
          lines.push(l);
          if (l.startsWith("Forwarding from")) opened(l);
        },
        error: (l) => errors.push(l),
      });
      const first = await within(
        Promise.race([forwarding, running.then(() => "ended")]),
        10_000,
        "Forwarding from",
      );
      const m = /^Forwarding from 127\.0\.0\.1:(\d+) -> 8098 \(lab pc\d+, foo\/web, 127\.0\.0\.1\)$/.exec(
        first,
      );
      assert.ok(m, first);
      const res = await fetch(`http://127.0.0.1:${m[1]}/`);
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.ok(lines.includes(`Handling connection for ${m[1]}`), lines.join("\n"));
      assert.equal((await netnsPids(netns)).length, 2); // the server and the relay
      stop.abort();
      await running;
      assert.deepEqual(await netnsPids(netns), [server.pid]);
      assert.equal(errors.length, 0, errors.join("\n"));

      const opts = {
        address: "127.0.0.1",
        podIp: false,
        dir,
        signal: stop.signal,
        log: () => {},
        error: () => {},
      };
      await assert.rejects(
        labPortForward(lab, "foo/web", ["x:80"], opts),
        /port "x:80": "x" is not a port number/,
      );
      await assert.rejects(
        labPortForward(lab, "foo/nope", ["80"], opts),
        /no workload "foo\/nope" in lab pc\d+; workloads: foo\/web/,
      );
      await assert.rejects(
        labPortForward(lab, "web", ["80"], opts),
        /target "web": expected meshd or <namespace>\/<workload>/,
      );
    } finally {
      await server.remove();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
