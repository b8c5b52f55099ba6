import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { encodeResource, RESOURCE_TYPES } from "../../../shared/mod.ts";
import { AdsServer } from "../../../meshd/xds/ads_server.ts";
import type { GeneratedList, ResourceGenerator } from "../../../meshd/xds/ads_types.ts";
import { TYPE_URLS } from "../../../meshd/xds/generators.ts";
import { AdsClient, type AdsClientHooks } from "../../../proxy/agent/ads_client.ts";
import { SERVICE, startMeshd, waitFor } from "../meshd_support.ts";

const grpcTest = (name: string, fn: () => Promise<void>) => Deno.test({ name, fn });

const NODE = { ip: "10.1.0.3", name: "sleep-1", namespace: "foo" };
const FAST = { initialMs: 50, maxMs: 400 };

const AUTHZ = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-get, namespace: foo}
spec:
  selector: {matchLabels: {app: sleep}}
  action: DENY
  rules: [{to: [{operation: {methods: [GET]}}]}]
`;

const RATINGS = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ratings, namespace: foo}
spec:
  hosts: [ratings.foo.svc.cluster.local]
  ports: [{name: http, number: 9080, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  endpoints: [{address: 10.1.0.7}]
`;

/** Records what the hooks see. */
function recorder() {
  const events: {
    kind: string;
    typeUrl?: string;
    names?: string[];
    removed?: string[];
    stream?: number;
    n?: number;
  }[] = [];
  const hooks: AdsClientHooks = {
    onConnect: (stream) => events.push({ kind: "connect", stream }),
    onDisconnect: (stream) => events.push({ kind: "disconnect", stream }),
    onResponse: (typeUrl, names, removed, stream) =>
      events.push({ kind: "response", typeUrl, names, removed, stream }),
    onNack: (typeUrl) => events.push({ kind: "nack", typeUrl }),
    onRetry: (n) => events.push({ kind: "retry", n }),
  };
  return { events, hooks };
}

grpcTest(
  "plain text: the six wildcard subscriptions, workload and services applied, every response ACKed",
  async () => {
    const dir = await Deno.makeTempDir();
    await Deno.writeTextFile(`${dir}/services.yaml`, SERVICE);
    const meshd = await startMeshd(dir);
    const client = new AdsClient({ address: `127.0.0.1:${meshd.grpcPort}`, node: NODE, plaintext: true });
    const updates: string[] = [];
    client.onUpdate((_c, typeUrl) => updates.push(typeUrl));
    try {
      client.start();
      await waitFor(
        () => client.config.workload?.proxied === true && "foo/httpbin" in client.config.services,
        5000,
      );
      const c = client.config;
      assert.equal(c.workload!.name, "sleep-1");
      assert.equal(c.workload!.serviceAccount, "sleep");
      assert.deepEqual(c.workload!.addresses, ["10.1.0.3"]);
      assert.deepEqual(c.services["foo/httpbin"].hosts, ["httpbin.foo.svc.cluster.local"]);
      assert.equal(c.services["foo/httpbin"].endpoints[0].address, "10.1.0.2");
      assert.ok(Object.isFrozen(c) && Object.isFrozen(c.services["foo/httpbin"].endpoints[0]));
      // meshd's view: one delta stream, four wildcard types, each last response ACKed.
      await waitFor(
        () =>
          meshd.server.ads.streams()[0]?.types.every((t) => t.lastSentNonce === t.lastAckedNonce) ?? false,
        3000,
      );
      const [stream] = meshd.server.ads.streams();
      assert.equal(stream.protocol, "delta");
      assert.equal(stream.node.id, "sidecar~10.1.0.3~sleep-1.foo~foo.svc.cluster.local");
      assert.deepEqual(stream.types.map((t) => [t.typeUrl, t.subscribed]), [
        [TYPE_URLS.workload, "*"],
        [TYPE_URLS.service, "*"],
        [TYPE_URLS.authorization, "*"],
        [TYPE_URLS.jwtPolicy, "*"],
        [TYPE_URLS.routeConfiguration, "*"],
        [TYPE_URLS.tlsCredential, "*"],
      ]);
      assert.equal(Object.keys(client.status().acked).length, 6);
      assert.deepEqual(client.status().nacked, {});

      // A policy selecting the workload arrives as an update; the workload stays the same object.
      const workload = client.config.workload;
      await Deno.writeTextFile(`${dir}/authz.yaml`, AUTHZ);
      await waitFor(() => "foo/deny-get" in client.config.authorizations, 5000);
      assert.equal(client.config.authorizations["foo/deny-get"].action, "DENY");
      assert.equal(client.config.workload, workload);
      assert.ok(updates.includes(TYPE_URLS.authorization));
    } finally {
      await client.stop();
      await meshd.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

/** A generator of mesh.v1.Service resources over a map of name → encoded body (or garbage). */
class ServiceGenerator implements ResourceGenerator {
  readonly bodies = new Map<string, { version: string; body: Uint8Array }>();
  #v = 0;
  set(name: string, version: string, body: Uint8Array): void {
    this.bodies.set(name, { version, body });
    this.#v++;
  }
  version(): string {
    return `v${this.#v}`;
  }
  generate(_node: unknown, typeUrl: string): GeneratedList | undefined {
    if (typeUrl !== TYPE_URLS.service) return { resources: [], version: "empty" };
    const resources = [...this.bodies].map(([name, b]) => ({ name, version: b.version, body: b.body }));
    return { resources, version: resources.map((r) => `${r.name}=${r.version}`).join(",") };
  }
}

const service = (name: string, host: string) =>
  encodeResource(RESOURCE_TYPES.service, {
    name,
    namespace: "foo",
    hosts: [host],
    ports: [{ name: "http", number: 80, targetPort: 8080, protocol: "HTTP" }],
    location: "MESH_INTERNAL",
    resolution: "STATIC",
  });

/** An ADS server (grpc-js, plain text) over a {@link ServiceGenerator}, recording the NACK messages it sees. */
async function serviceAds(): Promise<
  { gen: ServiceGenerator; nacks: string[]; ads: AdsServer; server: grpc.Server; port: number }
> {
  const gen = new ServiceGenerator();
  const nacks: string[] = [];
  const ads = new AdsServer(gen, { onNack: (_s, _t, message) => nacks.push(message) });
  const server = new grpc.Server();
  ads.register(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      "127.0.0.1:0",
      grpc.ServerCredentials.createInsecure(),
      (e, p) => (e ? reject(e) : resolve(p)),
    )
  );
  return { gen, nacks, ads, server, port };
}

grpcTest(
  "NACK of one chunk of a split update: meshd counts it and sends the chunk again once fixed; the agent reports it until then",
  async () => {
    const { gen, nacks, ads, server, port } = await serviceAds();
    const name = (i: number) => `foo/s${i}`;
    for (let i = 0; i < 300; i++) gen.set(name(i), "1", service(`s${i}`, `s${i}.example.com`));
    // The second service is garbage: the first response (a leading chunk of the first sync) is rejected.
    gen.set(name(1), "1", new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f]));
    const client = new AdsClient({ address: `127.0.0.1:${port}`, node: NODE, plaintext: true });
    try {
      client.start();
      // meshd counts the NACK when the update's last chunk is answered: every chunk was handled by then.
      await waitFor(() => nacks.length === 1, 5000);
      const services = () => Object.keys(client.config.services).length;
      const held = services();
      assert.ok(held > 0 && held < 300, `the other chunks applied, the rejected one not: ${held}`);
      assert.match(
        client.status().nacked[TYPE_URLS.service],
        /"foo\/s1": cannot decode/,
        "still reported after later chunks' ACKs",
      );
      assert.equal(ads.streams()[0].types.find((t) => t.typeUrl === TYPE_URLS.service)!.nacks, 1);

      gen.set(name(1), "2", service("s1", "s1.example.com"));
      ads.push();
      await waitFor(() => services() === 300, 5000);
      assert.deepEqual(client.status().nacked, {});
    } finally {
      await client.stop();
      ads.closeAll();
      server.forceShutdown();
    }
  },
);

grpcTest(
  "NACK: a resource with garbage bytes rejects the response, the previous resources of the type stay",
  async () => {
    const { gen, nacks, ads, server, port } = await serviceAds();
    gen.set("foo/a", "a1", service("a", "a1.example.com"));
    gen.set("foo/b", "b1", service("b", "b1.example.com"));
    const client = new AdsClient({ address: `127.0.0.1:${port}`, node: NODE, plaintext: true });
    try {
      client.start();
      await waitFor(() => Object.keys(client.config.services).length === 2, 5000);
      const before = client.config;

      // One push changes a (valid) and b (garbage): the whole response is NACKed.
      gen.set("foo/a", "a2", service("a", "a2.example.com"));
      gen.set("foo/b", "b2", new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f]));
      ads.push();
      await waitFor(() => nacks.length === 1, 3000);
      assert.match(
        nacks[0],
        /^type.googleapis.com\/mesh.v1.Service: rejected 1 of 2 resources, keeping the previous ones: /,
      );
      assert.match(nacks[0], /resource "foo\/b": cannot decode mesh.v1.Service: /);
      assert.equal(client.config, before, "nothing applied");
      assert.deepEqual(client.config.services["foo/b"].hosts, ["b1.example.com"]);
      assert.deepEqual(client.config.services["foo/a"].hosts, ["a1.example.com"], "not even the good one");
      assert.match(client.status().nacked[TYPE_URLS.service], /foo\/b/);
      const st = ads.streams()[0].types.find((t) => t.typeUrl === TYPE_URLS.service)!;
      assert.equal(st.nacks, 1);
      assert.notEqual(st.lastAckedNonce, st.lastSentNonce);

      // Fixed: meshd diffs against what the proxy kept, so both changes come and are ACKed.
      gen.set("foo/b", "b3", service("b", "b3.example.com"));
      ads.push();
      await waitFor(() => client.config.services["foo/b"]?.hosts[0] === "b3.example.com", 3000);
      assert.deepEqual(client.config.services["foo/a"].hosts, ["a2.example.com"]);
      assert.deepEqual(client.status().nacked, {});
      await waitFor(() => {
        const t = ads.streams()[0].types.find((t) => t.typeUrl === TYPE_URLS.service)!;
        return t.lastAckedNonce === t.lastSentNonce && t.lastNack === undefined;
      }, 3000);
    } finally {
      await client.stop();
      ads.closeAll();
      server.forceShutdown();
    }
  },
);

grpcTest(
  "meshd stopped and restarted on the same port: last config kept, backoff, resume with only what changed",
  async () => {
    const dir = await Deno.makeTempDir();
    await Deno.writeTextFile(`${dir}/services.yaml`, SERVICE);
    let meshd = await startMeshd(dir);
    const port = meshd.grpcPort;
    const { events, hooks } = recorder();
    const client = new AdsClient({
      address: `127.0.0.1:${port}`,
      node: NODE,
      plaintext: true,
      backoff: FAST,
      hooks,
    });
    try {
      client.start();
      await waitFor(
        () => client.config.workload?.proxied === true && "foo/httpbin" in client.config.services,
        5000,
      );
      const held = client.config;

      await meshd.stop();
      await waitFor(() => events.filter((e) => e.kind === "retry").length >= 3, 5000, "three retries");
      assert.equal(client.connected, false);
      assert.equal(client.config, held, "the last config is kept while meshd is away");
      const retries = events.filter((e) => e.kind === "retry").map((e) => e.n!);
      assert.ok(retries[0] <= 75 && retries[2] >= 100, `backoff grows: ${retries}`);

      // meshd comes back on the same port with one more service.
      await Deno.writeTextFile(`${dir}/ratings.yaml`, RATINGS);
      const mark = events.length;
      meshd = await startMeshd(dir, { grpcPort: port });
      await waitFor(() => "foo/ratings" in client.config.services, 5000);
      assert.equal(client.connected, true);
      const after = events.slice(mark);
      assert.equal(after.filter((e) => e.kind === "connect").length, 1);
      const services = after.filter((e) => e.kind === "response" && e.typeUrl === TYPE_URLS.service);
      assert.deepEqual(
        services.flatMap((e) => e.names),
        ["foo/ratings"],
        "initial_resource_versions: the unchanged httpbin service is not sent again",
      );
      assert.equal(client.config.services["foo/httpbin"], held.services["foo/httpbin"]);
      await waitFor(() => client.config.workload?.proxied === true, 5000);
    } finally {
      await client.stop();
      await meshd.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test("stop half-closes each stream and returns once meshd has ended it (denoland/deno#36788)", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/services.yaml`, SERVICE);
  const meshd = await startMeshd(dir);
  const client = new AdsClient({ address: `127.0.0.1:${meshd.grpcPort}`, node: NODE, plaintext: true });
  try {
    client.start();
    await waitFor(() => meshd.server.ads.connected === 1 && client.connected, 5000, "the stream");
    // A cancel returns at once and meshd drops the stream later; the half-close waits for meshd's OK,
    // which meshd sends after it has unregistered the stream.
    await client.stop();
    assert.equal(meshd.server.ads.connected, 0);
    assert.equal(client.connected, false);
    assert.ok("foo/httpbin" in client.config.services, "the config stays readable");
  } finally {
    await client.stop();
    await meshd.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a stream meshd ends is replaced on the same connection: no channel close, no GOAWAY", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/services.yaml`, SERVICE);
  const meshd = await startMeshd(dir);
  let connects = 0;
  const client = new AdsClient({
    address: `127.0.0.1:${meshd.grpcPort}`,
    node: NODE,
    plaintext: true,
    backoff: { initialMs: 10, maxMs: 20 },
    hooks: { onConnect: () => connects++ },
  });
  try {
    client.start();
    await waitFor(() => connects === 1 && meshd.server.ads.connected === 1, 5000, "the first stream");
    const [first] = meshd.server.ads.streams();
    meshd.server.ads.closeAll();
    await waitFor(() => connects === 2 && meshd.server.ads.connected === 1, 5000, "the second stream");
    const [second] = meshd.server.ads.streams();
    assert.notEqual(second.id, first.id);
    assert.equal(second.peer, first.peer, "the same TCP connection (client port)");
  } finally {
    await client.stop();
    await meshd.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
