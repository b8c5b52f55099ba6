import assert from "node:assert/strict";
import { defaultTemplate } from "../../shared/internal/inject/template.ts";
import { WebhookWorker } from "./worker_client.ts";
import { admissionReview, httpbinPod, POD_KIND } from "./test_support.ts";

function worker(): WebhookWorker {
  return new WebhookWorker({
    rootNamespace: "mesh-system",
    inject: {
      enabled: true,
      template: { ...defaultTemplate("mesh-system"), policy: "disabled" },
      settings: { nativeSidecars: false, tokenAudience: "mesh-ca", revision: "default" },
    },
  });
}

Deno.test("webhook Worker: escapes from inside fail with NotCapable (read, write, net, env, run, sys)", async () => {
  const w = worker();
  try {
    // Each of these works from this test's own thread (it runs with --allow-all).
    assert.ok((await Deno.readTextFile("/etc/passwd")).length > 0);
    const probes = [
      { op: "read" as const, path: "/etc/passwd" },
      { op: "write" as const, path: `${Deno.cwd()}/webhook-probe.txt` },
      { op: "net" as const, hostname: "127.0.0.1", port: 9 },
      { op: "env" as const, name: "HOME" },
      { op: "run" as const, command: "true" },
      { op: "sys" as const },
    ];
    for (const probe of probes) {
      const r = await w.probe(probe);
      assert.equal(r.allowed, false, `${probe.op} was allowed`);
      assert.equal(r.errorName, "NotCapable", `${probe.op}: ${r.errorName} ${r.message}`);
    }
  } finally {
    w.close();
  }
});

Deno.test("webhook Worker: answers an injection after the sandbox refused an escape, and is configurable", async () => {
  const w = worker();
  try {
    const body = JSON.stringify(admissionReview(httpbinPod(), POD_KIND));
    const first = await w.handle("inject", body);
    assert.ok("outcome" in first && first.outcome.outcome === "skipped", JSON.stringify(first));
    await w.configure({
      rootNamespace: "mesh-system",
      inject: {
        enabled: true,
        template: { ...defaultTemplate("mesh-system"), policy: "enabled" },
        settings: { nativeSidecars: true, tokenAudience: "mesh-ca", revision: "default" },
        namespaceLabels: { foo: { "mesh-injection": "enabled" } },
      },
    });
    const second = await w.handle("inject", body);
    assert.ok("outcome" in second && second.outcome.outcome === "injected", JSON.stringify(second));
    assert.ok("badRequest" in await w.handle("validate", "{nope"));
  } finally {
    w.close();
  }
});
