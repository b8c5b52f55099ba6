import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { buildPushContext, type ConfigResource, type PushContext } from "./push_context.ts";
import { withConnected } from "./incremental.ts";
import { POLICY_KINDS, withPolicies } from "./policy_change.ts";
import { configResource as res } from "./test_support.ts";
import { PushContextGenerator } from "../xds/generators.ts";
import {
  APPS,
  assertFrozenDeeply,
  config,
  generated,
  NAMESPACES,
  plain,
  random,
} from "./derive_test_support.ts";

const MODES = ["STRICT", "PERMISSIVE", "DISABLE", "UNSET"] as const;

/** A random policy of one of the three kinds, in a namespace of the config or the root namespace. */
function randomPolicy(rand: () => number, n: number): ConfigResource {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)];
  const namespace = rand() < 0.15 ? "mesh-system" : pick(NAMESPACES);
  const selector = rand() < 0.6 ? { matchLabels: { app: pick(APPS) } } : undefined;
  const name = `p-${Math.floor(rand() * 5)}`;
  switch (Math.floor(rand() * 3)) {
    case 0:
      return res("PeerAuthentication", namespace, name, {
        ...(selector ? { selector } : {}),
        mtls: { mode: pick(MODES) },
        ...(selector && rand() < 0.5
          ? { portLevelMtls: { [pick([8080, 9000, 9001, 9003])]: { mode: pick(MODES) } } }
          : {}),
      });
    case 1:
      return res("AuthorizationPolicy", namespace, name, {
        ...(selector ? { selector } : {}),
        action: pick(["ALLOW", "DENY"] as const),
        // paths on a TCP port: the TCP warnings change with the policies.
        rules: [{ to: [{ operation: rand() < 0.5 ? { paths: [`/p${n}`] } : { ports: ["9000"] } }] }],
      });
    default:
      return res("RequestAuthentication", namespace, name, {
        ...(selector ? { selector } : {}),
        jwtRules: [{ issuer: `issuer-${n}`, jwksUri: `https://keys.example/${n}` }],
      });
  }
}

/** Adds, replaces or removes one policy of `resources`; returns its kind. */
function editPolicy(rand: () => number, resources: ConfigResource[], n: number): string {
  const policy = randomPolicy(rand, n);
  const at = resources.findIndex((r) =>
    r.kind === policy.kind && r.namespace === policy.namespace && r.name === policy.name
  );
  if (at < 0) resources.push(policy);
  else if (rand() < 0.3) resources.splice(at, 1);
  else resources[at] = policy;
  return policy.kind;
}

for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
  Deno.test(`policy edits mixed with connects derived equal a full build (seed ${seed})`, () => {
    const rand = random(seed);
    const { resources: initial, registry, keys } = config(rand);
    const resources = [...initial];
    const connected = new Set<string>();
    const full = (version: string): PushContext =>
      buildPushContext(resources, { version, connected, registry });
    let ctx = full("0");
    const derivedGen = new PushContextGenerator(ctx);
    const sample = keys.slice(0, 8).concat("ns-2/pod-0");
    for (let step = 1; step <= 40; step++) {
      const kinds = new Set<string>();
      for (let i = Math.floor(rand() * 3); i >= 0; i--) kinds.add(editPolicy(rand, resources, step * 10 + i));
      if (rand() < 0.4) {
        const key = keys[Math.floor(rand() * keys.length)];
        if (connected.has(key)) connected.delete(key);
        else connected.add(key);
      }
      const change = withPolicies(ctx, resources, kinds, `v${step}`);
      const derived = withConnected(change.context, connected, `v${step}`).context;
      const expected = full(`v${step}`);
      assert.deepEqual(plain(derived), plain(expected), `seed ${seed} step ${step} (${[...kinds]})`);
      assertFrozenDeeply(derived);
      // Exactly the workloads whose mutual TLS differs are new views; every other object is the last one's.
      const differing = [...ctx.workloads.keys()].filter((k) =>
        !isDeepStrictEqual(plain(ctx.workloads.get(k)), plain(change.context.workloads.get(k)))
      );
      assert.deepEqual([...change.workloads].sort(), differing.sort());
      for (const [k, w] of ctx.workloads) {
        if (!change.workloads.has(k)) assert.equal(change.context.workloads.get(k), w, k);
      }
      if (change.workloads.size === 0) assert.equal(change.context.workloads, ctx.workloads);
      // A service is a new view only when an endpoint's mtlsDisabledPorts differs (PeerAuthentication).
      const services = change.context.services;
      assert.equal(change.servicesChanged, !isDeepStrictEqual(plain(ctx.services), plain(services)));
      if (!change.servicesChanged) assert.equal(services, ctx.services);
      services.forEach((svc, i) => {
        if (isDeepStrictEqual(plain(svc), plain(ctx.services[i]))) {
          assert.equal(svc, ctx.services[i], svc.key);
        }
      });
      assert.equal(change.context.gatewayRoutes, ctx.gatewayRoutes);
      if (!kinds.has("AuthorizationPolicy")) {
        assert.equal(change.context.authorizationPolicies, ctx.authorizationPolicies);
      }
      if (!kinds.has("RequestAuthentication")) {
        assert.equal(change.context.requestAuthentications, ctx.requestAuthentications);
      }
      derivedGen.update(derived);
      assert.deepEqual(
        generated(derivedGen, sample),
        generated(new PushContextGenerator(expected), sample),
        `seed ${seed} step ${step}: generated resources`,
      );
      ctx = derived;
    }
  });
}

Deno.test("withPolicies refuses a kind that is not a policy", () => {
  const ctx = buildPushContext([], { version: "1" });
  assert.throws(
    () => withPolicies(ctx, [], new Set(["ServiceEntry"]), "2"),
    /ServiceEntry is not a policy kind/,
  );
  assert.deepEqual([...POLICY_KINDS].sort(), [
    "AuthorizationPolicy",
    "PeerAuthentication",
    "RequestAuthentication",
  ]);
});

Deno.test("a PeerAuthentication edit makes new views of the workloads it changes only", () => {
  const we = (name: string, app: string) =>
    res("WorkloadEntry", "foo", name, { address: "10.0.0.1", labels: { app } });
  const resources = [we("w-1", "a"), we("w-2", "b")];
  const ctx = buildPushContext(resources, { version: "1" });
  const strict = res("PeerAuthentication", "foo", "a", {
    selector: { matchLabels: { app: "a" } },
    mtls: { mode: "STRICT" },
  });
  const change = withPolicies(ctx, [...resources, strict], new Set(["PeerAuthentication"]), "2");
  assert.deepEqual([...change.workloads], ["foo/w-1"]);
  assert.equal(change.context.workloads.get("foo/w-1")!.defaultMtls.mode, "STRICT");
  assert.equal(change.context.workloads.get("foo/w-2"), ctx.workloads.get("foo/w-2"));
  assert.equal(
    ctx.workloads.get("foo/w-1")!.defaultMtls.mode,
    "PERMISSIVE",
    "the last context is left as it was",
  );
});
