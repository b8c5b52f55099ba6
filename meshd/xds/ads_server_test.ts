import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { AdsServer } from "./ads_server.ts";
import type { AdsServerOptions, AdsStreamStatus, GeneratedList, ResourceGenerator } from "./ads_types.ts";
import { adsProtocol } from "../../shared/internal/xds/envoy_protos.ts";

const T = "type.googleapis.com/mesh.v1.Workload";
const enc = (s: string) => new TextEncoder().encode(s);

/** A generator over a mutable map, standing in for the push context. */
class MapGenerator implements ResourceGenerator {
  resources = new Map<string, string>();
  #version = 1;
  set(entries: Record<string, string | undefined>): void {
    for (const [k, v] of Object.entries(entries)) {
      if (v === undefined) this.resources.delete(k);
      else this.resources.set(k, v);
    }
    this.#version++;
  }
  version(): string {
    return `v${this.#version}`;
  }
  generate(_node: unknown, typeUrl: string): GeneratedList | undefined {
    if (typeUrl !== T) return undefined;
    const resources = [...this.resources].map(([name, body]) => ({ name, version: body, body: enc(body) }));
    return { resources, version: resources.map((r) => `${r.name}=${r.version}`).join(",") };
  }
}

// deno-lint-ignore no-explicit-any
type Msg = Record<string, any>;

/** A real ADS client stream with a queue of received responses. */
class Client {
  readonly received: Msg[] = [];
  readonly #waiters: (() => void)[] = [];
  ended = false;
  error = "";
  constructor(readonly call: grpc.ClientDuplexStream<Msg, Msg>) {
    call.on("data", (m: Msg) => {
      this.received.push(m);
      this.#waiters.splice(0).forEach((w) => w());
    });
    call.on("error", (e: Error) => {
      this.error = e.message;
      this.ended = true;
      this.#waiters.splice(0).forEach((w) => w());
    });
    call.on("end", () => (this.ended = true));
  }
  send(m: Msg): void {
    this.call.write(m);
  }
  async next(timeoutMs = 2000): Promise<Msg> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length === 0) {
      if (this.ended) throw new Error("stream ended");
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("no response in time");
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.received.shift()!;
  }
  /** Asserts that nothing arrives within a short while. */
  async nothing(ms = 150): Promise<void> {
    await new Promise((r) => setTimeout(r, ms));
    assert.deepEqual(this.received, [], "expected no response");
  }
}

async function withServer(
  fn: (
    ctx: { gen: MapGenerator; ads: AdsServer; events: string[]; client: () => grpc.Client },
  ) => Promise<void>,
  options: AdsServerOptions = {},
): Promise<void> {
  const gen = new MapGenerator();
  const events: string[] = [];
  const ads = new AdsServer(gen, {
    onConnect: (s: AdsStreamStatus) => events.push(`connect ${s.node.id}`),
    onDisconnect: (s: AdsStreamStatus) => events.push(`disconnect ${s.node.id}`),
    onNack: (_s, type, message) => events.push(`nack ${type} ${message}`),
    onAck: (_s, type) => events.push(`ack ${type}`),
    ...options,
  });
  const server = new grpc.Server();
  ads.register(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      "127.0.0.1:0",
      grpc.ServerCredentials.createInsecure(),
      (e, p) => (e ? reject(e) : resolve(p)),
    )
  );
  const clients: grpc.Client[] = [];
  try {
    await fn({
      gen,
      ads,
      events,
      client: () => {
        const c = new (adsProtocol().client)(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
        clients.push(c);
        return c;
      },
    });
  } finally {
    ads.closeAll();
    for (const c of clients) c.close();
    server.forceShutdown();
  }
}

const NODE = { id: "sidecar~10.0.0.5~httpbin-1.foo~foo.svc.cluster.local", cluster: "httpbin.foo" };
const names = (m: Msg) => m.resources.map((r: Msg) => r.name).sort();

Deno.test("delta: subscribe, receive, ACK, incremental push, NACK keeps the last good state", async () => {
  await withServer(async ({ gen, ads, events, client }) => {
    gen.set({ a: "a1", b: "b1" });
    const c = new Client((client() as Msg).DeltaAggregatedResources());
    c.send({ node: NODE, typeUrl: T });
    const first = await c.next();
    assert.equal(first.typeUrl, T);
    assert.deepEqual(names(first), ["a", "b"]);
    assert.equal(new TextDecoder().decode(first.resources[0].resource.value), "a1");
    assert.equal(first.resources[0].resource.type_url, T);
    c.send({ typeUrl: T, responseNonce: first.nonce });
    await c.nothing();
    assert.deepEqual(events, ["connect " + NODE.id, `ack ${T}`]);

    gen.set({ a: "a2", b: undefined, c: "c1" });
    ads.push();
    const second = await c.next();
    assert.deepEqual(names(second), ["a", "c"], "only what changed");
    assert.deepEqual(second.removedResources, ["b"]);
    c.send({ typeUrl: T, responseNonce: second.nonce, errorDetail: { code: 3, message: "bad a2" } });
    await c.nothing();
    assert.ok(events.includes(`nack ${T} bad a2`));
    const [status] = ads.streams();
    assert.equal(status.types[0].nacks, 1);
    assert.equal(status.types[0].lastNack, "bad a2");
    assert.equal(status.types[0].lastAckedNonce, first.nonce, "the last ACK stays the reference");

    gen.set({ a: "a3" });
    ads.push();
    const third = await c.next();
    // After a NACK the proxy still holds a1 and b1: the diff is against that.
    assert.deepEqual(names(third), ["a", "c"]);
    assert.deepEqual(third.removedResources, ["b"]);
    c.send({ typeUrl: T, responseNonce: third.nonce });
    gen.set({});
    ads.push();
    await c.nothing();
  });
});

Deno.test("delta: reconnect with initial_resource_versions gets only what differs", async () => {
  await withServer(async ({ gen, client }) => {
    gen.set({ a: "a1", b: "b1" });
    const c = new Client((client() as Msg).DeltaAggregatedResources());
    c.send({ node: NODE, typeUrl: T, initialResourceVersions: { a: "a1", b: "old", gone: "x" } });
    const m = await c.next();
    assert.deepEqual(names(m), ["b"]);
    assert.deepEqual(m.removedResources, ["gone"]);
  });
});

Deno.test("delta: explicit subscription, unsubscribe, and a name that does not exist", async () => {
  await withServer(async ({ gen, ads, client }) => {
    gen.set({ a: "a1", b: "b1" });
    const c = new Client((client() as Msg).DeltaAggregatedResources());
    c.send({ node: NODE, typeUrl: T, resourceNamesSubscribe: ["a", "nope"] });
    const m = await c.next();
    assert.deepEqual(names(m), ["a"]);
    assert.deepEqual(m.removedResources, ["nope"]);
    c.send({
      typeUrl: T,
      responseNonce: m.nonce,
      resourceNamesSubscribe: ["b"],
      resourceNamesUnsubscribe: ["a"],
    });
    const m2 = await c.next();
    assert.deepEqual(names(m2), ["b"]);
    c.send({ typeUrl: T, responseNonce: m2.nonce });
    gen.set({ a: "a2" });
    ads.push();
    await c.nothing();
  });
});

Deno.test("state of the world: full set on every push, ACK by nonce, stale nonce ignored", async () => {
  await withServer(async ({ gen, ads, events, client }) => {
    gen.set({ a: "a1" });
    const c = new Client((client() as Msg).StreamAggregatedResources());
    c.send({ node: NODE, typeUrl: T });
    const first = await c.next();
    assert.equal(first.versionInfo, "v2");
    assert.equal(first.resources.length, 1);
    c.send({ typeUrl: T, versionInfo: first.versionInfo, responseNonce: first.nonce });
    await c.nothing();
    gen.set({ b: "b1" });
    ads.push();
    const second = await c.next();
    assert.equal(second.resources.length, 2);
    assert.equal(second.versionInfo, "v3");
    c.send({ typeUrl: T, versionInfo: first.versionInfo, responseNonce: first.nonce });
    await c.nothing();
    c.send({ typeUrl: T, versionInfo: second.versionInfo, responseNonce: second.nonce });
    await c.nothing();
    const [status] = ads.streams();
    assert.equal(status.protocol, "sotw");
    assert.equal(status.types[0].lastAckedVersion, "v3");
    assert.equal(events.filter((e) => e.startsWith("ack")).length, 2);
  });
});

Deno.test("a stream that names no node, or asks for an unknown type, is ended with an error", async () => {
  await withServer(async ({ client, ads }) => {
    const c = new Client((client() as Msg).DeltaAggregatedResources());
    c.send({ typeUrl: T });
    await assert.rejects(() => c.next(), /stream ended/);
    assert.match(c.error, /^3 INVALID_ARGUMENT: the first request of a stream must carry node.id/);
    const d = new Client((client() as Msg).DeltaAggregatedResources());
    d.send({ node: NODE, typeUrl: "type.googleapis.com/nope" });
    await assert.rejects(() => d.next(), /stream ended/);
    assert.match(d.error, /^12 UNIMPLEMENTED: type type.googleapis.com\/nope is not served by meshd/);
    assert.equal(ads.connected, 0);
  });
});

Deno.test("disconnect is seen and the stream leaves the registry", async () => {
  await withServer(async ({ gen, ads, events, client }) => {
    gen.set({ a: "a1" });
    const c = new Client((client() as Msg).DeltaAggregatedResources());
    c.send({ node: NODE, typeUrl: T });
    await c.next();
    assert.equal(ads.connected, 1);
    c.call.cancel();
    const deadline = Date.now() + 2000;
    while (ads.connected > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(ads.connected, 0);
    assert.ok(events.includes(`disconnect ${NODE.id}`));
  });
});

Deno.test("push throttle: never more streams sending than the throttle, and every stream is served", async () => {
  let adsRef: AdsServer | undefined;
  let maxInFlightAtSend = 0;
  await withServer(async ({ gen, ads, client }) => {
    adsRef = ads;
    gen.set({ a: "x".repeat(256 * 1024), b: "b1" });
    const streams = Array.from({ length: 8 }, (_, i) => {
      const c = new Client((client() as Msg).DeltaAggregatedResources());
      c.send({ node: { ...NODE, id: `proxy-${i}` }, typeUrl: T });
      return c;
    });
    for (const c of streams) {
      // "a" is over the chunk size, so the update arrives as two responses.
      const got = [...names(await c.next(3000)), ...names(await c.next(3000))].sort();
      assert.deepEqual(got, ["a", "b"]);
    }
    assert.equal(maxInFlightAtSend, 0, "a send started only when no other stream held the slot");
    assert.equal(ads.inFlight, 0);
  }, {
    pushThrottle: 1,
    onSend: () => (maxInFlightAtSend = Math.max(maxInFlightAtSend, adsRef?.inFlight ?? 0)),
  });
});

Deno.test("push throttle: DISCO_PUSH_THROTTLE as given, 0 or unset 1000 (one JS thread: cores add no push parallelism)", () => {
  const gen = { version: () => "1", generate: () => undefined };
  assert.equal(new AdsServer(gen, { pushThrottle: 7 }).pushThrottle, 7);
  assert.equal(new AdsServer(gen, { pushThrottle: 0 }).pushThrottle, 1000);
  assert.equal(new AdsServer(gen).pushThrottle, 1000);
});

Deno.test("byte budget: big responses are paced by bytes in flight even with free slots", async () => {
  let adsRef: AdsServer | undefined;
  let maxInFlightAtSend = 0;
  await withServer(async ({ gen, ads, client }) => {
    adsRef = ads;
    gen.set({ a: "x".repeat(256 * 1024) });
    const streams = Array.from({ length: 6 }, (_, i) => {
      const c = new Client((client() as Msg).DeltaAggregatedResources());
      c.send({ node: { ...NODE, id: `proxy-${i}` }, typeUrl: T });
      return c;
    });
    for (const c of streams) assert.deepEqual(names(await c.next(3000)), ["a"]);
    assert.equal(maxInFlightAtSend, 0, "the first big send used the whole budget");
  }, {
    pushThrottle: 100,
    maxInFlightBytes: 1024,
    onSend: () => (maxInFlightAtSend = Math.max(maxInFlightAtSend, adsRef?.inFlight ?? 0)),
  });
});

Deno.test("large updates are split into chunks; ACKs of leading chunks are not stale, the last one ACKs", async () => {
  await withServer(async ({ gen, ads, events, client }) => {
    gen.set(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`r${i}`, `${i}`.repeat(10 * 1024)])));
    const c = new Client((client() as Msg).DeltaAggregatedResources());
    c.send({ node: NODE, typeUrl: T });
    const got: string[] = [];
    const nonces: string[] = [];
    while (got.length < 10) {
      const m = await c.next();
      got.push(...names(m));
      nonces.push(m.nonce);
    }
    assert.ok(nonces.length >= 3, `10 x 10 KiB in chunks of 8 KiB: ${nonces.length} responses`);
    for (const n of nonces) c.send({ typeUrl: T, responseNonce: n });
    await c.nothing();
    assert.deepEqual(got.sort(), Array.from({ length: 10 }, (_, i) => `r${i}`).sort());
    assert.equal(events.filter((e) => e.startsWith("ack")).length, 1, "one update, one ACK");
    assert.equal(ads.streams()[0].types[0].lastAckedNonce, nonces.at(-1));
  });
});

Deno.test("a NACK of a leading chunk rejects the whole update: counted, and the next push sends the rejected resources again", async () => {
  await withServer(async ({ gen, ads, events, client }) => {
    gen.set(Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`r${i}`, `${i}`.repeat(10 * 1024)])));
    const c = new Client((client() as Msg).DeltaAggregatedResources());
    c.send({ node: NODE, typeUrl: T });
    const got: Msg[] = [];
    for (let n = 0; n < 4;) {
      const m = await c.next();
      got.push(m);
      n += m.resources.length;
    }
    assert.ok(got.length >= 2, `4 x 10 KiB in chunks of 8 KiB: ${got.length} responses`);
    const rejected = names(got[0]);
    // The proxy keeps what it had for the first chunk (nothing) and takes the others.
    c.send({ typeUrl: T, responseNonce: got[0].nonce, errorDetail: { code: 3, message: "r0: bad" } });
    for (const m of got.slice(1)) c.send({ typeUrl: T, responseNonce: m.nonce });
    await c.nothing();
    const status = ads.streams()[0].types[0];
    assert.equal(status.nacks, 1);
    assert.equal(status.lastNack, "r0: bad");
    assert.deepEqual(events.filter((e) => e.startsWith("nack") || e.startsWith("ack")), [
      `nack ${T} r0: bad`,
    ]);
    gen.set({ x: "x1" });
    ads.push();
    const again: string[] = [];
    for (let n = 0; n < 5;) {
      const m = await c.next();
      again.push(...names(m));
      n += m.resources.length;
    }
    for (const r of rejected) assert.ok(again.includes(r), `${r} sent again: ${again}`);
  });
});
