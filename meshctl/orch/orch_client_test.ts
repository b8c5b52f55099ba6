import assert from "node:assert/strict";
import { join } from "node:path";
import { impersonationHeaders, loadOrchConfig, orchClient, type OrchFlags } from "./orch_client.ts";
import { startOrchTestApi } from "./test_support.ts";

const NONE: OrchFlags = {
  orchconfig: "",
  context: "",
  as: "",
  asGroup: [],
  asUid: "",
  namespace: "",
  meshNamespace: "mesh-system",
};

Deno.test("orch client: -c, --context and the namespace default from the context, against the test API server", async () => {
  const t = await startOrchTestApi();
  try {
    const current = orchClient({ ...NONE, orchconfig: t.kubeconfig }, {});
    try {
      assert.equal(current.context, "with-ns");
      assert.equal(current.namespace, "foo");
      const ns = await current.api.json<{ metadata: { name: string } }>(
        "GET",
        `/api/v1/namespaces/${current.namespace}`,
      );
      assert.equal(ns.metadata.name, "foo");
    } finally {
      await current.close();
    }
    const bare = orchClient({ ...NONE, orchconfig: t.kubeconfig, context: "bare" }, {});
    assert.equal(bare.namespace, "default");
    await bare.close();
    const flagged = orchClient({ ...NONE, orchconfig: t.kubeconfig, context: "bare", namespace: "bar" }, {});
    assert.equal(flagged.namespace, "bar");
    await flagged.close();
    assert.throws(
      () => orchClient({ ...NONE, orchconfig: t.kubeconfig, context: "nope" }, {}),
      /--context: context "nope" does not exist in --orchconfig .*two-contexts\.yaml/,
    );
  } finally {
    await t.stop();
  }
});

Deno.test("orch client: --as, --as-group (repeated) and --as-uid reach the server as separate header lines", async () => {
  const t = await startOrchTestApi();
  try {
    const c = orchClient({
      ...NONE,
      orchconfig: t.kubeconfig,
      as: "jane",
      asGroup: ["devs", "ops"],
      asUid: "42",
    }, {});
    try {
      await c.api.json("GET", "/api/v1/namespaces/foo");
    } finally {
      await c.close();
    }
    const seen = t.log.find((e) => new URL(e.url).pathname === "/api/v1/namespaces/foo")!;
    const lines = seen.headers.filter(([name]) => name.toLowerCase().startsWith("impersonate-"))
      .map(([name, value]) => [name.toLowerCase(), value]);
    assert.deepEqual(lines, [
      ["impersonate-user", "jane"],
      ["impersonate-group", "devs"],
      ["impersonate-group", "ops"],
      ["impersonate-uid", "42"],
    ]);
    assert.ok(seen.headers.some(([n, v]) => n.toLowerCase() === "authorization" && v.startsWith("Bearer ")));
  } finally {
    await t.stop();
  }
});

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
