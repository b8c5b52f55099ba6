/**
 * Dynamic completion from the cluster (issue 15, item 5): namespaces, contexts, pods and proxies from
 * the test API server, in-process and through the real bash completion script.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildProgram } from "../../../meshctl/cli.ts";
import { completions } from "../../../meshctl/orch/complete.ts";
import { completionScript } from "../../../shared/internal/cli/completion.ts";
import { processDeadline } from "../../../shared/internal/testing/deadline.ts";
import { type OrchTestApi, startOrchTestApi } from "./orch_support.ts";

const program = buildProgram({ stdout: () => {}, stderr: () => {}, setExitCode: () => {} });

async function addPods(t: OrchTestApi): Promise<void> {
  const pods = t.api.server.objects.registry.find("", "v1", "pods")!;
  const admin = { username: "test", groups: ["system:masters"] };
  await t.api.server.objects.create(
    t.api.server.objects.registry.find("", "v1", "namespaces")!,
    "",
    { metadata: { name: "bar" } },
    admin,
  );
  const pod = (name: string, namespace: string, containers: string[], init: string[] = []) =>
    t.api.server.objects.create(pods, namespace, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace },
      spec: {
        containers: containers.map((c) => ({ name: c, image: c })),
        initContainers: init.map((c) => ({ name: c, image: c })),
      },
    }, admin);
  await pod("httpbin-1", "foo", ["httpbin", "mesh-proxy"]);
  await pod("sleep-1", "foo", ["sleep"], ["mesh-init", "mesh-proxy"]);
  await pod("legacy-1", "foo", ["legacy"]);
  await pod("web-1", "bar", ["web", "mesh-proxy"]);
}

Deno.test("completion: namespaces, contexts, pods and proxies come from the cluster the words name", async () => {
  const t = await startOrchTestApi();
  try {
    await addPods(t);
    const env = { KUBECONFIG: t.kubeconfig };
    const c = (words: string[]) => completions(words, program, env);
    assert.deepEqual(await c(["-n", ""]), [
      "bar",
      "default",
      "foo",
      "kube-node-lease",
      "kube-public",
      "kube-system",
      "mesh-system",
    ]);
    assert.deepEqual(await c(["proxy-config", "cluster", "--namespace", "b"]), ["bar"]);
    assert.deepEqual(await c(["--context", ""]), ["bare", "with-ns"]);
    // The context's namespace (foo), sidecars in containers or (native) init containers.
    assert.deepEqual(await c(["proxy-config", "cluster", ""]), ["httpbin-1.foo", "sleep-1.foo"]);
    assert.deepEqual(await c(["ps", "s"]), ["sleep-1.foo"]);
    assert.deepEqual(await c(["-n", "bar", "x", "proxy-stats", ""]), ["web-1.bar"]);
    assert.deepEqual(await c(["--context", "bare", "proxy-status", ""]), [], "namespace default has no pods");
    assert.deepEqual(await c(["admin", "log", ""]), ["httpbin-1", "legacy-1", "sleep-1"]);
    // Nothing dynamic: a flag, a second target, a command without arguments, a flag without values.
    assert.deepEqual(await c(["proxy-config", "cluster", "-"]), []);
    assert.deepEqual(await c(["proxy-status", "httpbin-1.foo", ""]), []);
    assert.deepEqual(await c(["version", ""]), []);
    assert.deepEqual(await c(["proxy-status", "--timeout", ""]), []);
    // No cluster: nothing, quietly.
    assert.deepEqual(await completions(["-n", ""], program, { HOME: t.api.dir }), []);
  } finally {
    await t.stop();
  }
});

Deno.test("completion: the real bash script completes proxies and namespaces through meshctl __complete", async () => {
  const t = await startOrchTestApi();
  const bin = await Deno.makeTempDir({ prefix: "meshctl-bin-" });
  try {
    await addPods(t);
    const main = new URL("../../../meshctl/main.ts", import.meta.url).pathname;
    await Deno.writeTextFile(
      join(bin, "meshctl"),
      `#!/bin/sh\nexec '${Deno.execPath()}' run -A '${main}' "$@"\n`,
      {
        mode: 0o755,
      },
    );
    const script = join(bin, "completion.bash");
    await Deno.writeTextFile(
      script,
      completionScript(program, "bash", { descriptions: true, dynamic: "__complete" }),
    );
    const complete = async (words: string[]): Promise<string[]> => {
      const deadline = processDeadline(60_000, `bash completion of ${words.join(" ")}`);
      const line = words.map((w) => `'${w}'`).join(" ");
      const out = await new Deno.Command("bash", {
        args: [
          "-c",
          `source '${script}'; COMP_WORDS=(meshctl ${line}); COMP_CWORD=${words.length}; __meshctl_complete; ` +
          `printf '%s\\n' "\${COMPREPLY[@]}"`,
        ],
        // KUBECONFIG wins over ~/.kube/config; HOME stays (Deno's cache is under it).
        env: { PATH: `${bin}:${Deno.env.get("PATH")}`, KUBECONFIG: t.kubeconfig },
        signal: deadline.signal,
        stdout: "piped",
        stderr: "piped",
      }).output();
      deadline.end();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l !== "").sort();
    };
    assert.deepEqual(await complete(["proxy-config", "cluster", ""]), ["httpbin-1.foo", "sleep-1.foo"]);
    assert.deepEqual(await complete(["-n", "f"]), ["foo"]);
    assert.deepEqual(await complete(["proxy-config", "cl"]), ["cluster", "clusters"], "static words stay");
  } finally {
    await Deno.remove(bin, { recursive: true });
    await t.stop();
  }
});
