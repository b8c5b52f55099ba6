import assert from "node:assert/strict";
import { defaultOrchFlags, orchClient } from "../../../meshctl/orch/orch_client.ts";
import { startOrchTestApi } from "./orch_support.ts";
import { kubectlMissing, kubectlOk } from "../../../deploy/lab/kube_api/test_support.ts";
import { requires } from "../../../shared/internal/testing/prerequisites.ts";

const NONE = defaultOrchFlags();

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

Deno.test(
  requires(kubectlMissing(), {
    name:
      "orch client: the same Impersonate-* header lines as kubectl 1.32, and the same namespace per context",
    fn: async () => {
      const t = await startOrchTestApi();
      try {
        const impersonation = (since: number) =>
          t.log.slice(since).filter((e) => new URL(e.url).pathname === "/api/v1/namespaces/foo").map((e) =>
            e.headers.filter(([n]) => n.toLowerCase().startsWith("impersonate-")).map(([n, v]) => [
              n.toLowerCase(),
              v,
            ])
          );
        let since = t.log.length;
        await kubectlOk(t.kubeconfig, [
          "get",
          "namespace",
          "foo",
          "--as",
          "jane",
          "--as-group",
          "devs",
          "--as-group",
          "ops",
          "--as-uid",
          "42",
        ]);
        const fromKubectl = impersonation(since);
        assert.ok(fromKubectl.length > 0);
        since = t.log.length;
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
        // Header order is not meaningful (Go's client sorts its header map); the lines are.
        const sorted = (lines: string[][]) => lines.map((l) => l.join(": ")).sort();
        assert.deepEqual(impersonation(since).map(sorted), [sorted(fromKubectl[0])]);
        assert.equal(
          fromKubectl[0].filter(([n]) => n === "impersonate-group").length,
          2,
          "kubectl: one line per group",
        );

        for (const context of ["with-ns", "bare"]) {
          const kubectlNs = await kubectlOk(t.kubeconfig, [
            "config",
            "view",
            "--minify",
            "--context",
            context,
            "-o",
            "jsonpath={..namespace}",
          ]);
          const ours = orchClient({ ...NONE, orchconfig: t.kubeconfig, context }, {});
          await ours.close();
          assert.equal(ours.namespace, kubectlNs || "default", context);
        }
      } finally {
        await t.stop();
      }
    },
  }),
);
