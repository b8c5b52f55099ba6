/**
 * Tests only: what the tests of derived push contexts share (incremental_test.ts, policy_change_test.ts):
 * a seeded random config, the context as plain data, what the generator sends, and a deep-freeze check.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ConfigResource } from "./push_context.ts";
import { FrozenMap } from "./frozen.ts";
import { configResource as res } from "./test_support.ts";
import type { RegistrySnapshot } from "./registry_services.ts";
import { PushContextGenerator, TYPE_URLS } from "../xds/generators.ts";
import type { ProxyNode } from "../xds/ads_types.ts";

/** A small deterministic PRNG (mulberry32), so that a failing sequence can be replayed by its seed. */
export function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const NAMESPACES = ["ns-0", "ns-1", "ns-2"];
export const APPS = ["a", "b", "c"];

/** Workloads of three apps in three namespaces (some labelled tlsMode), services over them, policies. */
export function config(
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
export function plain(value: unknown): unknown {
  if (value instanceof FrozenMap) return [...value.entries()].map(([k, v]) => [k, plain(v)]);
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).filter(([k]) => k !== "builtAt" && k !== "version").map(([k, v]) => [k, plain(v)]),
  );
}

export function nodeOf(key: string): ProxyNode {
  const [namespace, name] = key.split("/");
  return {
    id: `sidecar~10.0.0.1~${name}.${namespace}~${namespace}.svc.cluster.local`,
    cluster: "",
    metadata: {},
  };
}

/** What the generator sends a proxy of each workload, by type: names and bytes. */
export function generated(gen: PushContextGenerator, keys: readonly string[]): unknown {
  return keys.map((key) =>
    Object.values(TYPE_URLS).map((typeUrl) =>
      gen.generate(nodeOf(key), typeUrl)?.resources.map((r) => [r.name, r.version, [...r.body]])
    )
  );
}

export function assertFrozenDeeply(value: unknown, path = "ctx"): void {
  if (value === null || typeof value !== "object") return;
  if (value instanceof FrozenMap) {
    for (const [k, v] of value.entries()) assertFrozenDeeply(v, `${path}[${k}]`);
    return;
  }
  assert.ok(Object.isFrozen(value), `${path} is frozen`);
  for (const [k, v] of Object.entries(value)) assertFrozenDeeply(v, `${path}.${k}`);
}
