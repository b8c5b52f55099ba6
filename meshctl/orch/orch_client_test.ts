import assert from "node:assert/strict";
import { join } from "node:path";
import { defaultOrchFlags, impersonationHeaders, loadOrchConfig } from "./orch_client.ts";

const NONE = defaultOrchFlags();

Deno.test("orch client: impersonation without --as is refused, as kubectl does", () => {
  assert.deepEqual(impersonationHeaders(NONE), []);
  assert.throws(() => impersonationHeaders({ ...NONE, asGroup: ["g"] }), /--as-group and --as-uid need --as/);
  assert.throws(() => impersonationHeaders({ ...NONE, asUid: "1" }), /need --as/);
});

Deno.test("orch client: KUBECONFIG files merge first-wins, then ~/.kube/config, else a clear error", async () => {
  const dir = await Deno.makeTempDir({ prefix: "orch-config-" });
  try {
    const file = (name: string, ctx: string, server: string) => {
      const path = join(dir, name);
      Deno.writeTextFileSync(
        path,
        JSON.stringify({
          apiVersion: "v1",
          kind: "Config",
          clusters: [{ name: ctx, cluster: { server } }],
          users: [{ name: "u", user: { token: name } }],
          contexts: [{ name: ctx, context: { cluster: ctx, user: "u", namespace: `ns-${ctx}` } }],
          "current-context": ctx,
        }),
      );
      return path;
    };
    const a = file("a.yaml", "a", "https://a.example:6443");
    const b = file("b.yaml", "b", "https://b.example:6443");
    const { config, source } = loadOrchConfig(NONE, { KUBECONFIG: `${a}:${join(dir, "missing")}:${b}` });
    assert.equal(config.getCurrentContext(), "a");
    assert.deepEqual(config.contexts.map((c) => c.name), ["a", "b"]);
    assert.equal(config.users.length, 1, "the first file's user u wins");
    assert.match(source, /^KUBECONFIG /);
    const switched = loadOrchConfig({ orchconfig: "", context: "b" }, { KUBECONFIG: `${a}:${b}` });
    assert.equal(switched.config.getCurrentCluster()?.server, "https://b.example:6443");

    await Deno.mkdir(join(dir, "home", ".kube"), { recursive: true });
    await Deno.copyFile(b, join(dir, "home", ".kube", "config"));
    const home = loadOrchConfig(NONE, { HOME: join(dir, "home") });
    assert.equal(home.config.getCurrentContext(), "b");
    assert.throws(
      () => loadOrchConfig(NONE, { HOME: join(dir, "nowhere") }),
      /no orchestrator configuration/,
    );
    assert.throws(
      () => loadOrchConfig({ orchconfig: join(dir, "missing"), context: "" }, {}),
      /--orchconfig: .*missing/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
