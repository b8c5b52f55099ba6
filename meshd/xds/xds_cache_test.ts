import assert from "node:assert/strict";
import { decodeResource, RESOURCE_TYPES } from "../../shared/mod.ts";
import { b64, makeTestCa } from "../../shared/credentials/_test_support.ts";
import { buildPushContext, type ConfigResource } from "../push_context/push_context.ts";
import { configResource as res, secretResource } from "../push_context/test_support.ts";
import type { GeneratedList, ProxyNode } from "./ads_types.ts";
import { PushContextGenerator, TYPE_URLS } from "./generators.ts";
import { GRPC_TYPE_URLS } from "./grpcgen/grpcgen.ts";
import { sameMessage, XdsCache } from "./xds_cache.ts";

/** What the cache reports, counted as the xds_cache_* metrics count it. */
function counting() {
  const counts = { hit: 0, miss: 0, clear: 0, size: 0, entries: 0 };
  const stats = {
    read: (r: "hit" | "miss") => void counts[r]++,
    evicted: (reason: "clear" | "size", n: number) => void (counts[reason] += n),
    size: (n: number) => void (counts.entries = n),
  };
  return { counts, stats };
}

const sidecar = (ns: string, name: string, verified = true): ProxyNode => ({
  id: `sidecar~1.2.3.4~${name}.${ns}~${ns}.svc.cluster.local`,
  cluster: "",
  metadata: {},
  ...(verified ? { verifiedIdentity: `spiffe://cluster.local/ns/${ns}/sa/default` } : {}),
});

Deno.test("sameMessage: deep equality as the encoder reads a message, and nothing looser", () => {
  assert.ok(sameMessage({ a: [1, { b: "x" }], c: new Uint8Array([1, 2]) }, {
    c: new Uint8Array([1, 2]),
    a: [1, { b: "x" }],
  }));
  assert.ok(!sameMessage({ a: 0 }, { a: -0 }), "a double field encodes -0 otherwise than 0");
  assert.ok(!sameMessage({ a: undefined }, {}));
  assert.ok(!sameMessage({}, { a: undefined }));
  assert.ok(!sameMessage({ a: [1, 2] }, { a: [2, 1] }));
  assert.ok(!sameMessage({ a: [1] }, { a: { 0: 1 } }));
  assert.ok(!sameMessage({ a: "1" }, { a: 1 }));
  assert.ok(!sameMessage({ a: new Uint8Array([1]) }, { a: new Uint8Array([2]) }));
  assert.ok(!sameMessage({ a: new Map() }, { a: new Map() }), "only plain objects are compared by content");
  assert.ok(!sameMessage({ a: null }, { a: {} }));
});

Deno.test("XdsCache: a hit needs an equal message; bounded by its size, least recently read evicted", () => {
  const { counts, stats } = counting();
  const cache = new XdsCache({ maxEntries: 2, stats });
  const T = RESOURCE_TYPES.authorization;
  const msg = (action: string) => ({ name: "p", namespace: "foo", action, rules: [] });
  const a = cache.get(T, "foo/a", "foo/a", msg("ALLOW"));
  assert.equal(cache.get(T, "foo/a", "foo/a", msg("ALLOW")), a, "an equal message: the same bytes");
  const changed = cache.get(T, "foo/a", "foo/a", msg("DENY"));
  assert.notEqual(changed.version, a.version, "a changed message is encoded again");
  assert.deepEqual(counts, { hit: 1, miss: 2, clear: 1, size: 0, entries: 1 });
  cache.get(T, "foo/b", "foo/b", msg("ALLOW"));
  // Recency counts by push: a read in a later push makes foo/b the least recently read.
  cache.nextPush();
  cache.get(T, "foo/a", "foo/a", msg("DENY"));
  cache.get(T, "foo/c", "foo/c", msg("ALLOW"));
  assert.equal(cache.size, 2);
  assert.equal(counts.size, 1);
  assert.equal(cache.get(T, "foo/a", "foo/a", msg("DENY")), changed, "foo/a stayed");
  const misses = counts.miss;
  cache.get(T, "foo/b", "foo/b", msg("ALLOW"));
  assert.equal(counts.miss, misses + 1, "foo/b was evicted");
  // Entries no push reads are dropped after two push contexts.
  cache.nextPush();
  cache.get(T, "foo/a", "foo/a", msg("DENY"));
  cache.nextPush();
  cache.nextPush();
  assert.equal(cache.size, 1, "foo/a read two pushes ago stays; foo/b goes");
  cache.nextPush();
  assert.equal(cache.size, 0, "then foo/a goes too");
  assert.equal(counts.entries, 0, "xds_cache_size follows");
});

/** A small PRNG, so that a failing seed can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMESPACES = ["foo", "bar", "mesh-system"];
const APPS = ["a", "b", "gw"];

/** A random mesh: workloads, services, the four policy kinds, a gateway with credentials. */
function randomConfig(
  rand: () => number,
  certs: { pair: Record<string, string>; other: Record<string, string> },
): ConfigResource[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const labels = () => ({ app: pick(APPS), ...(rand() < 0.5 ? { version: pick(["v1", "v2"]) } : {}) });
  const out: ConfigResource[] = [];
  for (let i = 0; i < 8; i++) {
    out.push(res("WorkloadEntry", pick(NAMESPACES), `w${i}`, {
      address: `10.0.0.${i + 1}`,
      labels: i === 0 ? { app: "gw" } : labels(),
      serviceAccount: pick(["default", "sa1"]),
      ports: rand() < 0.5 ? { http: 8080 } : {},
    }));
  }
  for (let i = 0; i < 3; i++) {
    const ns = pick(NAMESPACES);
    out.push(res("ServiceEntry", ns, `s${i}`, {
      hosts: [`s${i}.${ns}.svc.cluster.local`],
      ports: [{ name: "http", number: 80, targetPort: pick([8080, 9090]) }],
      resolution: "STATIC",
      workloadSelector: { labels: { app: pick(APPS) } },
    }));
  }
  for (const ns of NAMESPACES) {
    if (rand() < 0.6) {
      out.push(res("PeerAuthentication", ns, "pa", { mtls: { mode: pick(["STRICT", "PERMISSIVE"]) } }));
    }
  }
  for (let i = 0; i < 5; i++) {
    const ns = pick(NAMESPACES);
    out.push(res("AuthorizationPolicy", ns, `ap${i}`, {
      ...(rand() < 0.6 ? { selector: { matchLabels: labels() } } : {}),
      action: pick(["ALLOW", "DENY", "AUDIT"] as const),
      ...(rand() < 0.8
        ? { rules: [{ to: [{ operation: { paths: [`/p${Math.floor(rand() * 3)}`] } }] }] }
        : {}),
    }));
  }
  for (let i = 0; i < 2; i++) {
    out.push(res("RequestAuthentication", pick(NAMESPACES), `ra${i}`, {
      ...(rand() < 0.5 ? { selector: { matchLabels: labels() } } : {}),
      jwtRules: [
        rand() < 0.5
          ? { issuer: `iss${i}`, jwks: '{"keys":[]}' }
          : { issuer: `iss${i}`, jwksUri: "https://idp/keys" },
      ],
    }));
  }
  out.push(res("Gateway", pick(NAMESPACES), "g", {
    selector: { app: "gw" },
    servers: [
      { port: { number: 80, name: "http", protocol: "HTTP" }, hosts: ["*"] },
      {
        port: { number: 443, name: "https", protocol: "HTTPS" },
        hosts: ["h.example.com"],
        tls: { mode: "SIMPLE", credentialName: "cred" },
      },
    ],
  }));
  out.push(res("VirtualService", pick(NAMESPACES), "v", {
    hosts: ["*"],
    gateways: [`${pick(NAMESPACES)}/g`],
    http: [{
      route: [{
        destination: { host: `s${Math.floor(rand() * 3)}.foo.svc.cluster.local`, port: { number: 80 } },
      }],
    }],
  }));
  for (const ns of NAMESPACES) {
    if (rand() < 0.7) {
      const data = rand() < 0.5 ? certs.pair : certs.other;
      out.push(secretResource(ns, "cred", data));
    }
  }
  return out;
}

/** Every node the random meshes have: each workload's sidecar, verified or not, a router, a stranger, proxyless. */
function nodes(): ProxyNode[] {
  const out: ProxyNode[] = [];
  for (const ns of NAMESPACES) {
    for (let i = 0; i < 8; i++) {
      out.push(sidecar(ns, `w${i}`), sidecar(ns, `w${i}`, false));
      out.push({
        id: `router~10.0.0.${i + 1}~w${i}.${ns}~${ns}.svc.cluster.local`,
        cluster: "",
        metadata: {},
        verifiedIdentity: `spiffe://cluster.local/ns/${ns}/sa/sa1`,
      });
    }
    out.push({ id: "x", cluster: "", metadata: { NAMESPACE: ns, WORKLOAD_NAME: "w1", GENERATOR: "grpc" } });
  }
  out.push({ id: "stranger", cluster: "", metadata: {} });
  return out;
}

function assertSameList(
  cached: GeneratedList | undefined,
  fresh: GeneratedList | undefined,
  what: string,
): void {
  assert.equal(cached === undefined, fresh === undefined, what);
  if (!cached || !fresh) return;
  assert.equal(cached.version, fresh.version, `${what}: list version`);
  assert.equal(cached.resources.length, fresh.resources.length, `${what}: resources`);
  cached.resources.forEach((r, i) => {
    const f = fresh.resources[i];
    assert.equal(r.name, f.name, `${what}: name`);
    assert.equal(r.version, f.version, `${what} ${r.name}: version`);
    assert.deepEqual(r.body, f.body, `${what} ${r.name}: bytes`);
  });
}

Deno.test("differential: through many pushes of random configs, the cached output is byte for byte the uncached", async () => {
  const { ca, leaf } = await makeTestCa();
  const [one, two] = [await leaf("h.example.com"), await leaf("h.example.com")];
  const certs = {
    pair: { "tls.crt": b64(one.certPem), "tls.key": b64(one.keyPem) },
    other: { "tls.crt": b64(two.certPem), "tls.key": b64(two.keyPem), "ca.crt": b64(ca.certPem) },
  };
  const types = [...Object.values(TYPE_URLS), ...Object.values(GRPC_TYPE_URLS)];
  const seen = new Set<string>();
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const rand = prng(seed);
    const { counts, stats } = counting();
    // A tiny bound on odd seeds: evictions in the middle of a push must not change a byte either.
    const cached = new PushContextGenerator(buildPushContext([], { version: "0" }), {
      maxEntries: seed % 2 ? 5 : 60_000,
      stats,
    });
    for (let push = 1; push <= 12; push++) {
      const config = randomConfig(rand, certs);
      const options = {
        version: `${seed}.${push}`,
        connected: new Set(rand() < 0.5 ? ["foo/w1", "bar/w2"] : ["foo/w3"]),
        jwks: new Map([["https://idp/keys", rand() < 0.5 ? '{"keys":[1]}' : '{"keys":[2]}']]),
        jwksFetchMode: rand() < 0.5 ? "meshd" as const : "proxy" as const,
      };
      const ctx = buildPushContext(config, options);
      cached.update(ctx);
      const fresh = new PushContextGenerator(buildPushContext(config, options), { enabled: false });
      for (const node of nodes()) {
        for (const typeUrl of types) {
          const list = cached.generate(node, typeUrl);
          if (list?.resources.length) seen.add(typeUrl);
          assertSameList(
            list,
            fresh.generate(node, typeUrl),
            `seed ${seed} push ${push} ${node.id} ${typeUrl}`,
          );
        }
      }
    }
    assert.ok(
      counts.hit > 0 && counts.miss > 0,
      `seed ${seed}: the cache was exercised (${JSON.stringify(counts)})`,
    );
    if (seed % 2) assert.ok(counts.size > 0, `seed ${seed}: the size bound evicted`);
  }
  assert.deepEqual([...seen].sort(), [...types].sort(), "every type was generated with resources");
});

/** The decoded resources of a list. */
function decoded(
  list: GeneratedList | undefined,
  type: keyof typeof RESOURCE_TYPES,
): Record<string, unknown>[] {
  return (list?.resources ?? []).map((r) => decodeResource(RESOURCE_TYPES[type], r.body));
}

Deno.test("invalidation: an AuthorizationPolicy change reaches every proxy it selects, and only them", () => {
  const workloads = Array.from(
    { length: 40 },
    (_, i) =>
      res("WorkloadEntry", "foo", `w${i}`, { address: `10.0.1.${i}`, labels: { app: i % 4 ? "x" : "y" } }),
  );
  const policy = (path: string) =>
    res("AuthorizationPolicy", "foo", "deny", {
      selector: { matchLabels: { app: "x" } },
      action: "DENY",
      rules: [{ to: [{ operation: { paths: [path] } }] }],
    });
  const gen = new PushContextGenerator(buildPushContext([...workloads, policy("/old")], { version: "1" }));
  const before = workloads.map((_, i) => gen.generate(sidecar("foo", `w${i}`), TYPE_URLS.authorization));
  gen.update(buildPushContext([...workloads, policy("/new")], { version: "2" }));
  workloads.forEach((_, i) => {
    const list = gen.generate(sidecar("foo", `w${i}`), TYPE_URLS.authorization);
    const rules = decoded(list, "authorization").map((p) => JSON.stringify(p.rules));
    if (i % 4) {
      assert.equal(rules.length, 1, `w${i}`);
      assert.ok(rules[0].includes('"paths":["/new"]'), `w${i}: ${rules[0]}`);
      assert.notEqual(list!.version, before[i]!.version, `w${i}: a new list version, so the stream sends it`);
    } else {
      assert.equal(list, before[i], `w${i} is not selected: its list is untouched`);
    }
  });
});

Deno.test("invalidation: a workload that becomes proxied changes the Service every proxy receives", () => {
  const config = [
    res("WorkloadEntry", "foo", "server", { address: "10.0.0.2", labels: { app: "s" }, serviceAccount: "s" }),
    res("WorkloadEntry", "foo", "client", { address: "10.0.0.3", labels: { app: "c" } }),
    res("ServiceEntry", "foo", "s", {
      hosts: ["s.foo.svc.cluster.local"],
      ports: [{ name: "http", number: 80, targetPort: 8080 }],
      resolution: "STATIC",
      workloadSelector: { labels: { app: "s" } },
    }),
  ];
  const gen = new PushContextGenerator(buildPushContext(config, { version: "1" }));
  const endpoint = () => {
    const [svc] = decoded(gen.generate(sidecar("foo", "client"), TYPE_URLS.service), "service");
    return (svc.endpoints as Record<string, unknown>[])[0];
  };
  assert.equal(endpoint().proxied ?? false, false);
  gen.update(buildPushContext(config, { version: "2", connected: new Set(["foo/server"]) }));
  assert.equal(endpoint().proxied, true, "the client must now use mutual TLS to it");
  assert.equal(endpoint().identity, "spiffe://cluster.local/ns/foo/sa/s");
  const [own] = decoded(gen.generate(sidecar("foo", "server"), TYPE_URLS.workload), "workload");
  assert.equal(own.proxied, true);
});

Deno.test("invalidation: new JWKS keys and a rotated gateway Secret reach their proxies", async () => {
  const { leaf } = await makeTestCa();
  const [one, two] = [await leaf("h.example.com"), await leaf("h.example.com")];
  const config = (cert: { certPem: string; keyPem: string }): ConfigResource[] => [
    res("WorkloadEntry", "foo", "gw", { address: "10.0.0.2", labels: { app: "gw" } }),
    res("RequestAuthentication", "foo", "jwt", { jwtRules: [{ issuer: "i", jwksUri: "https://idp/keys" }] }),
    res("Gateway", "foo", "g", {
      selector: { app: "gw" },
      servers: [{
        port: { number: 443, name: "https", protocol: "HTTPS" },
        hosts: ["h.example.com"],
        tls: { mode: "SIMPLE", credentialName: "cred" },
      }],
    }),
    secretResource("foo", "cred", { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) }),
  ];
  const gw = sidecar("foo", "gw");
  const gen = new PushContextGenerator(
    buildPushContext(config(one), { version: "1", jwks: new Map([["https://idp/keys", '{"keys":[1]}']]) }),
  );
  const keys = () =>
    (decoded(gen.generate(gw, TYPE_URLS.jwtPolicy), "jwtPolicy")[0].providers as { jwks: string }[])[0].jwks;
  const key = () => decoded(gen.generate(gw, TYPE_URLS.tlsCredential), "tlsCredential")[0].privateKey;
  assert.equal(keys(), '{"keys":[1]}');
  assert.equal(key(), one.keyPem);
  gen.update(
    buildPushContext(config(two), { version: "2", jwks: new Map([["https://idp/keys", '{"keys":[2]}']]) }),
  );
  assert.equal(keys(), '{"keys":[2]}');
  assert.equal(key(), two.keyPem);
});
