import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { buildPushContext, type ConfigResource, type PushContext } from "./push_context.ts";
import { withConnected } from "./incremental.ts";
import { FrozenMap } from "./frozen.ts";
import { configResource as res } from "./test_support.ts";
import type { RegistrySnapshot } from "./registry_services.ts";
import { PushContextGenerator, TYPE_URLS } from "../xds/generators.ts";
import type { ProxyNode } from "../xds/ads_types.ts";

/** A small deterministic PRNG (mulberry32), so that a failing sequence can be replayed by its seed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMESPACES = ["ns-0", "ns-1", "ns-2"];
const APPS = ["a", "b", "c"];

/** Workloads of three apps in three namespaces (some labelled tlsMode), services over them, policies. */
function config(
  rand: () => number,
): { resources: ConfigResource[]; registry: RegistrySnapshot; keys: string[] } {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)];
  const resources: ConfigResource[] = [];
  const keys: string[] = [];
  for (let i = 0; i < 16; i++) {
    const namespace = pick(NAMESPACES);
    const labels: Record<string, string> = { app: pick(APPS) };
    if (rand() < 0.2) labels["security.istio.io/tlsMode"] = "istio";
    resources.push(res("WorkloadEntry", namespace, `we-${i}`, {
      address: `10.0.0.${i + 1}`,
      labels,
      serviceAccount: `sa-${i % 3}`,
      ...(rand() < 0.3 ? { ports: { http: 9000 + i } } : {}),
    }));
    keys.push(`${namespace}/we-${i}`);
  }
  for (const namespace of NAMESPACES) {
    for (const app of APPS) {
      resources.push(res("ServiceEntry", namespace, `svc-${app}`, {
        hosts: [`${app}.${namespace}.svc.cluster.local`],
        ports: [{ name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" }, {
          name: "tcp",
          number: 9000,
          protocol: "TCP",
        }],
        location: "MESH_INTERNAL",
        resolution: "STATIC",
        workloadSelector: { labels: { app } },
        ...(app === "c"
          ? { endpoints: [{ address: "10.9.0.1", labels: { "security.mesh.io/tlsMode": "mesh" } }] }
          : {}),
      }));
    }
  }
  resources.push(res("PeerAuthentication", "ns-1", "default", { mtls: { mode: "STRICT" } }));
  resources.push(res("AuthorizationPolicy", "ns-0", "deny-a", {
    selector: { matchLabels: { app: "a" } },
    action: "DENY",
    rules: [{ to: [{ operation: { paths: ["/admin"] } }] }],
  }));
  const registry: RegistrySnapshot = {
    workloads: [{
      kind: "WorkloadEntry",
      namespace: "ns-2",
      name: "pod-0",
      resource: {
        metadata: { name: "pod-0", namespace: "ns-2" },
        spec: { address: "10.8.0.1", labels: { app: "pod" } },
      },
    }],
    services: [{
      key: "ns-2/pods",
      name: "pods",
      namespace: "ns-2",
      hosts: ["pods.ns-2.svc.cluster.local"],
      addresses: [],
      ports: [{ name: "http", number: 80, targetPort: 8080, protocol: "HTTP" }],
      endpoints: [
        { workload: "ns-2/pod-0", address: "10.8.0.1", ports: { 80: 8080 }, labels: {} },
        { workload: "ns-2/gone", address: "10.8.0.2", ports: { 80: 8080 }, labels: { app: "pod" } },
        { workload: "", address: "10.8.0.3", ports: { 80: 8080 }, labels: {} },
      ],
    }],
    debug: { registry: "test", clusterID: "c1" },
  };
  keys.push("ns-2/pod-0", "ns-2/gone", "ns-9/no-such-workload");
  return { resources, registry, keys };
}

/** The context as plain data (FrozenMaps as entry lists), without the build's time and version. */
function plain(value: unknown): unknown {
  if (value instanceof FrozenMap) return [...value.entries()].map(([k, v]) => [k, plain(v)]);
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).filter(([k]) => k !== "builtAt" && k !== "version").map(([k, v]) => [k, plain(v)]),
  );
}

function nodeOf(key: string): ProxyNode {
  const [namespace, name] = key.split("/");
  return {
    id: `sidecar~10.0.0.1~${name}.${namespace}~${namespace}.svc.cluster.local`,
    cluster: "",
    metadata: {},
  };
}

/** What the generator sends a proxy of each workload, by type: names and bytes. */
function generated(gen: PushContextGenerator, keys: readonly string[]): unknown {
  return keys.map((key) =>
    Object.values(TYPE_URLS).map((typeUrl) =>
      gen.generate(nodeOf(key), typeUrl)?.resources.map((r) => [r.name, r.version, [...r.body]])
    )
  );
}

function assertFrozenDeeply(value: unknown, path = "ctx"): void {
  if (value === null || typeof value !== "object") return;
  if (value instanceof FrozenMap) {
    for (const [k, v] of value.entries()) assertFrozenDeeply(v, `${path}[${k}]`);
    return;
  }
  assert.ok(Object.isFrozen(value), `${path} is frozen`);
  for (const [k, v] of Object.entries(value)) assertFrozenDeeply(v, `${path}.${k}`);
}

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
