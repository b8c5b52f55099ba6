import assert from "node:assert/strict";
import { Command } from "@commander-js/extra-typings";
import { debugPortOfPod, MESHD_DEBUG_PORT, meshdForwardChosen } from "./meshd_forward.ts";

Deno.test("meshd forward: the debug port is the pod's --httpAddr port, else meshd's default", () => {
  const pod = (...args: string[]) => ({ spec: { containers: [{ args }] } });
  const cases: [ReturnType<typeof pod> | Record<string, never>, number][] = [
    [pod("discovery", "--httpAddr=127.0.0.1:8080"), 8080],
    [pod("discovery", "--httpAddr", ":9876"), 9876],
    [pod("discovery", "--httpAddr=[::1]:1234"), 1234],
    [pod("discovery", "--grpcAddr=:15010"), MESHD_DEBUG_PORT],
    [pod("discovery", "--httpAddr=nonsense"), MESHD_DEBUG_PORT],
    [{}, MESHD_DEBUG_PORT],
  ];
  for (const [p, want] of cases) assert.equal(debugPortOfPod(p), want, JSON.stringify(p));
});

Deno.test("meshd forward: chosen by -c, --context or KUBECONFIG, unless meshd is named another way", () => {
  const chosen = (args: string[], env: Record<string, string> = {}) => {
    let seen = false;
    const program = new Command("meshctl").option("-c, --orchconfig <file>").option("--context <name>")
      .option("--lab <file>");
    const sub = program.command("proxy-status").option("--debug-address <a>").option("--xds-address <a>")
      .option("--xds-label <s>").action((_o, cmd) => {
        seen = meshdForwardChosen(cmd as never, env);
      });
    sub.exitOverride();
    program.parse(args, { from: "user" });
    return seen;
  };
  assert.equal(chosen(["proxy-status"]), false);
  assert.equal(chosen(["-c", "k", "proxy-status"]), true);
  assert.equal(chosen(["--context", "x", "proxy-status"]), true);
  assert.equal(chosen(["proxy-status"], { KUBECONFIG: "k" }), true);
  assert.equal(chosen(["-c", "k", "proxy-status", "--debug-address", "h:1"]), false);
  assert.equal(chosen(["-c", "k", "proxy-status", "--xds-address", "h:1"]), false);
  assert.equal(chosen(["-c", "k", "proxy-status", "--xds-label", "app=meshd"]), false);
  assert.equal(chosen(["-c", "k", "--lab", "l", "proxy-status"]), false);
  assert.equal(chosen(["-c", "k", "proxy-status"], { MESHCTL_DEBUG_ADDRESS: "h:1" }), false);
});
