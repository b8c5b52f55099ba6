import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { buildPushContext, type PushContext } from "./push_context.ts";
import { withConnected } from "./incremental.ts";
import { configResource as res } from "./test_support.ts";
import { PushContextGenerator } from "../xds/generators.ts";
import { assertFrozenDeeply, config, generated, plain, random } from "./derive_test_support.ts";

for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
  Deno.test(`connects and disconnects derived equal a full build (seed ${seed})`, () => {
    const rand = random(seed);
    const { resources, registry, keys } = config(rand);
    const full = (connected: ReadonlySet<string>, version: string): PushContext =>
      buildPushContext(resources, { version, connected, registry });
    const connected = new Set<string>();
    let ctx = full(connected, "0");
    // One generator follows the derived contexts, as the discovery server's does.
    const derivedGen = new PushContextGenerator(ctx);
    const sample = keys.slice(0, 6).concat("ns-2/pod-0");
    for (let step = 1; step <= 40; step++) {
      const flips = 1 + Math.floor(rand() * 4);
      for (let i = 0; i < flips; i++) {
        const key = keys[Math.floor(rand() * keys.length)];
        if (connected.has(key)) connected.delete(key);
        else connected.add(key);
      }
      const change = withConnected(ctx, connected, `v${step}`);
      const expected = full(connected, `v${step}`);
      assert.deepEqual(plain(change.context), plain(expected), `seed ${seed} step ${step}`);
      assertFrozenDeeply(change.context);
      // What changed is reported: exactly the workloads whose view differs, and the services.
      const differing = [...expected.workloads.keys()].filter((k) =>
        !isDeepStrictEqual(plain(ctx.workloads.get(k)), plain(expected.workloads.get(k)))
      );
      assert.deepEqual([...change.workloads].sort(), differing.sort());
      assert.equal(change.servicesChanged, !isDeepStrictEqual(plain(ctx.services), plain(expected.services)));
      if (!change.servicesChanged) assert.equal(change.context.services, ctx.services);
      if (change.context !== ctx) derivedGen.update(change.context);
      assert.deepEqual(generated(derivedGen, sample), generated(new PushContextGenerator(expected), sample));
      ctx = change.context;
    }
  });
}

Deno.test("a connect that flips nothing returns the same context", () => {
  const labelled = res("WorkloadEntry", "foo", "mesh-1", {
    address: "10.0.0.1",
    labels: { "security.mesh.io/tlsMode": "mesh" },
  });
  const ctx = buildPushContext([labelled], { version: "1" });
  const change = withConnected(ctx, new Set(["foo/mesh-1", "foo/unknown"]), "2");
  assert.equal(change.context, ctx);
  assert.equal(change.workloads.size, 0);
  assert.equal(change.servicesChanged, false);
});

Deno.test("the previous context is left as it was", () => {
  const we = res("WorkloadEntry", "foo", "w-1", { address: "10.0.0.1", labels: { app: "w" } });
  const se = res("ServiceEntry", "foo", "w", {
    hosts: ["w.foo.svc.cluster.local"],
    ports: [{ name: "http", number: 80, protocol: "HTTP" }],
    resolution: "STATIC",
    workloadSelector: { labels: { app: "w" } },
  });
  const ctx = buildPushContext([we, se], { version: "1" });
  const change = withConnected(ctx, new Set(["foo/w-1"]), "2");
  assert.equal(change.context.workloads.get("foo/w-1")!.proxied, true);
  assert.equal(change.context.services[0].endpoints[0].identity, "spiffe://cluster.local/ns/foo/sa/default");
  assert.equal(ctx.workloads.get("foo/w-1")!.proxied, false);
  assert.equal(ctx.services[0].endpoints[0].proxied, false);
  assert.equal(change.context.version, "2");
});
