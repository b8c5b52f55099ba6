import assert from "node:assert/strict";
import { runMeshctl } from "./cli.ts";

/**
 * Every command and subcommand of the meshctl seed (002, "Endpoints"), by its canonical path: 87 with
 * the groups (`experimental config`, `experimental describe`, …) counted.
 */
export const SEED_COMMANDS: readonly string[] = [
  "admin",
  "admin log",
  "analyze",
  "experimental authz",
  "experimental authz check",
  "bug-report",
  "bug-report version",
  "completion",
  ...["bash", "fish", "powershell", "zsh"].map((s) => `completion ${s}`),
  "create-remote-secret",
  "dashboard",
  ...[
    "controlz",
    "legacy-proxy",
    "proxy",
    "meshd-debug",
    "charts",
    "trace-ui-a",
    "trace-ui-b",
    "graph-ui",
    "metrics-ui",
    "apm-ui",
  ].map((s) => `dashboard ${s}`),
  "experimental",
  ...[
    "check-inject",
    "config",
    "config list",
    "describe",
    "describe pod",
    "describe service",
    "proxy-stats",
    "injector",
    "injector list",
    "internal-debug",
    "metrics",
    "precheck",
    "proxy-status",
    "version",
    "workload",
    "workload entry",
    "workload entry configure",
    "workload group",
    "workload group create",
  ].map((s) => `experimental ${s}`),
  "install",
  "upgrade",
  "manifest",
  "manifest install",
  "manifest generate",
  "manifest translate",
  "orch-inject",
  "options",
  "proxy-config",
  ...[
    "all",
    "bootstrap",
    "cluster",
    "ecds",
    "endpoint",
    "listener",
    "log",
    "rootca-compare",
    "route",
    "secret",
  ]
    .map((s) => `proxy-config ${s}`),
  "proxy-status",
  "remote-clusters",
  "tag",
  ...["generate", "list", "remove", "set"].map((s) => `tag ${s}`),
  "uninstall",
  "validate",
  "version",
  "waypoint",
  ...["apply", "delete", "generate", "list", "status"].map((s) => `waypoint ${s}`),
  "nodeproxy-config",
  ...["all", "certificate", "connections", "log", "policy", "service", "workload"].map((s) =>
    `nodeproxy-config ${s}`
  ),
];

/** How meshctl answers `<path> --help`. */
export async function classify(
  path: string,
): Promise<{ kind: "exists" | "not yet" | "unknown"; out: string }> {
  let out = "";
  const write = (t: string) => (out += t);
  const code = await runMeshctl([...path.split(" "), "--help"], {
    stdout: write,
    stderr: write,
    setExitCode: () => {},
  });
  if (code === 0) {
    const usage = /^Usage: meshctl (.*?) \[/m.exec(out)?.[1] ?? "";
    const shown = usage.split(" ").map((w) => w.split("|")[0]).join(" ");
    assert.equal(shown, path, `${path} --help printed the help of "${shown}"`);
    return { kind: "exists", out };
  }
  if (code === 1 && out.includes("not available yet")) return { kind: "not yet", out };
  assert.equal(code, 2, `${path} --help exited ${code}: ${out}`);
  assert.match(out, /^error: unknown command "[^"]+" for "meshctl[^"]*"$/m, path);
  return { kind: "unknown", out };
}

Deno.test("seed commands: each exists, says not yet, or is an unknown command (never a parent's help)", async () => {
  assert.equal(SEED_COMMANDS.length, 87);
  const kinds = new Map<string, string[]>();
  for (const path of SEED_COMMANDS) {
    const { kind } = await classify(path);
    kinds.set(kind, [...(kinds.get(kind) ?? []), path]);
  }
  for (const p of ["waypoint", "waypoint list", "nodeproxy-config connections"]) {
    assert.ok(kinds.get("not yet")?.includes(p), p);
  }
  for (const p of ["proxy-config cluster", "experimental authz check", "experimental metrics", "validate"]) {
    assert.ok(kinds.get("exists")?.includes(p), p);
  }
});

Deno.test("unknown commands: an error naming the command and its parent, exit 2, with or without --help", async () => {
  for (
    const [args, parent] of [
      [["nope"], "meshctl"],
      [["nope", "--help"], "meshctl"],
      [["-n", "foo", "proxy-config", "nope", "-h"], "meshctl proxy-config"],
      [["x", "nope"], "meshctl experimental"],
      [["--lab", "l", "experimental", "workload", "nope"], "meshctl experimental workload"],
      [["help", "nope"], "meshctl"],
      [["x", "help", "workload", "nope"], "meshctl experimental workload"],
    ] as const
  ) {
    let err = "", out = "";
    const code = await runMeshctl([...args], {
      stdout: (t) => (out += t),
      stderr: (t) => (err += t),
      setExitCode: () => {},
    });
    assert.equal(code, 2, args.join(" "));
    assert.equal(out, "", "no help printed");
    assert.equal(err, `error: unknown command "nope" for "${parent}"\nRun '${parent} --help' for usage.\n`);
  }
});

Deno.test("not-yet commands: listed in help with why; running them or their help exits 1 saying so", async () => {
  let out = "";
  assert.equal(
    await runMeshctl(["--help"], { stdout: (t) => (out += t), stderr: () => {}, setExitCode: () => {} }),
    0,
  );
  assert.match(out, /waypoint\s+Manage waypoint configuration\s+\(not yet:\s+needs\s+ambient\s+mode/);
  for (
    const args of [["waypoint"], ["waypoint", "apply", "--for", "all"], ["nodeproxy-config", "log", "--help"]]
  ) {
    let err = "";
    const code = await runMeshctl(args, {
      stdout: () => {},
      stderr: (t) => (err += t),
      setExitCode: () => {},
    });
    assert.equal(code, 1, args.join(" "));
    assert.match(
      err,
      /^error: meshctl (waypoint|nodeproxy-config)[a-z ]*: not available yet: needs ambient mode/,
    );
  }
});
