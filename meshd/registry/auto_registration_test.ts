import assert from "node:assert/strict";
import type { OfKind } from "../push_context/push_context.ts";
import { autoRegisteredName, AutoRegistry } from "./auto_registration.ts";

const group: OfKind<"WorkloadGroup"> = {
  kind: "WorkloadGroup",
  namespace: "vm",
  name: "reviews",
  resource: {
    metadata: { name: "reviews", namespace: "vm" },
    spec: {
      metadata: { labels: { app: "reviews", tier: "group" } },
      template: {
        serviceAccount: "reviews",
        ports: { http: 9080 },
        labels: { tier: "template", version: "v1" },
      },
    },
  },
};

const node = (ip: string, extra: Record<string, unknown> = {}) => ({
  id: `sidecar~${ip}~vm-1.vm~vm.svc.cluster.local`,
  cluster: "",
  metadata: { AUTO_REGISTER_GROUP: "reviews", NAMESPACE: "vm", INSTANCE_IPS: ip, ...extra },
});

function registry(gracePeriodMs = 100) {
  const events: string[] = [];
  const r = new AutoRegistry({
    gracePeriodMs,
    groups: () => new Map([["vm/reviews", group]]),
    onChange: () => events.push("change"),
    hooks: {
      onSuccess: (k) => events.push(`success ${k}`),
      onUpdate: (k) => events.push(`update ${k}`),
      onUnregister: (k) => events.push(`unregister ${k}`),
      onDelete: (k) => events.push(`delete ${k}`),
      onError: (reason) => events.push(`error ${reason}`),
    },
  });
  return { r, events };
}

Deno.test("names: <group>-<ip>, IPv6 colons as dashes, network appended", () => {
  assert.equal(autoRegisteredName({ group: "g", ip: "10.0.0.1", network: "" }), "g-10.0.0.1");
  assert.equal(autoRegisteredName({ group: "g", ip: "fd00::1", network: "n1" }), "g-fd00--1-n1");
});

Deno.test("a proxy naming a WorkloadGroup gets an entry from the template; labels: node > group > template", () => {
  const { r, events } = registry();
  const { key } = r.connect(node("10.5.0.7", { LABELS: { version: "v2" } }));
  assert.equal(key, "vm/reviews-10.5.0.7");
  const [entry] = r.entries();
  assert.deepEqual(entry.resource.spec, {
    serviceAccount: "reviews",
    ports: { http: 9080 },
    address: "10.5.0.7",
    labels: { tier: "group", version: "v2", app: "reviews" },
  });
  assert.equal(
    (entry.resource.metadata.annotations as Record<string, string>)[
      "networking.mesh.io/autoRegistrationGroup"
    ],
    "reviews",
  );
  assert.deepEqual(events, ["success vm/reviews-10.5.0.7", "change"]);
  r.stop();
});

Deno.test("after the last disconnect the entry waits for the grace period, then goes", async () => {
  const { r, events } = registry(80);
  const { key } = r.connect(node("10.5.0.7"));
  r.disconnect(key!);
  assert.equal(r.entries().length, 1, "kept during the grace period");
  await new Promise((res) => setTimeout(res, 150));
  assert.equal(r.entries().length, 0);
  assert.deepEqual(events.slice(-3), [
    "unregister vm/reviews-10.5.0.7",
    "delete vm/reviews-10.5.0.7",
    "change",
  ]);
});

Deno.test("a reconnect within the grace period keeps the entry", async () => {
  const { r, events } = registry(80);
  const { key } = r.connect(node("10.5.0.7"));
  r.disconnect(key!);
  r.connect(node("10.5.0.7"));
  await new Promise((res) => setTimeout(res, 150));
  assert.equal(r.entries().length, 1);
  assert.ok(events.includes("update vm/reviews-10.5.0.7"));
  assert.ok(!events.some((e) => e.startsWith("delete")));
  r.stop();
});

Deno.test("two streams of one workload: the entry lives while either is connected", async () => {
  const { r } = registry(50);
  const { key } = r.connect(node("10.5.0.7"));
  r.connect(node("10.5.0.7"));
  r.disconnect(key!);
  await new Promise((res) => setTimeout(res, 100));
  assert.equal(r.entries().length, 1);
  r.disconnect(key!);
  await new Promise((res) => setTimeout(res, 100));
  assert.equal(r.entries().length, 0);
});

const refusals: [string, Record<string, unknown>, RegExp][] = [
  ["an unknown group", { AUTO_REGISTER_GROUP: "nope" }, /no WorkloadGroup vm\/nope/],
  ["no namespace", { NAMESPACE: "" }, /has no NAMESPACE/],
];
for (const [name, meta, reason] of refusals) {
  Deno.test(`refused and counted: ${name}`, () => {
    const { r, events } = registry();
    const res = r.connect(node("10.5.0.7", meta));
    assert.equal(res.key, undefined);
    assert.match(res.reason!, reason);
    assert.match(events[0], /^error /);
    assert.equal(r.entries().length, 0);
  });
}

Deno.test("a node that names no group is not auto-registered", () => {
  const { r, events } = registry();
  assert.deepEqual(r.connect({ id: "sidecar~1.2.3.4~a.b~b.svc", cluster: "", metadata: {} }), {});
  assert.deepEqual(events, []);
});
