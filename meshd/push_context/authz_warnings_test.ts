import assert from "node:assert/strict";
import { buildPushContext } from "./push_context.ts";
import { configResource as res } from "./test_support.ts";

// Istio's authz-tcp task: tcp-echo's service declares 9000 and 9001 as TCP; httpbin is HTTP.
const tcpEcho = [
  res("ServiceEntry", "foo", "tcp-echo", {
    hosts: ["tcp-echo.foo.svc.cluster.local"],
    ports: [
      { name: "tcp", number: 9000, protocol: "TCP" },
      { name: "tcp-other", number: 9001, protocol: "TCP" },
    ],
    location: "MESH_INTERNAL",
    resolution: "STATIC",
    workloadSelector: { labels: { app: "tcp-echo" } },
  }),
  res("WorkloadEntry", "foo", "tcp-echo-1", { address: "10.1.0.3", labels: { app: "tcp-echo" } }),
];
const httpbin = [
  res("ServiceEntry", "foo", "httpbin", {
    hosts: ["httpbin.foo.svc.cluster.local"],
    ports: [{ name: "http", number: 8000, targetPort: 8080, protocol: "HTTP" }],
    location: "MESH_INTERNAL",
    resolution: "STATIC",
    workloadSelector: { labels: { app: "httpbin" } },
  }),
  res("WorkloadEntry", "foo", "httpbin-1", { address: "10.1.0.2", labels: { app: "httpbin" } }),
];
const allowGet = (app: string) =>
  res("AuthorizationPolicy", "foo", `allow-get-${app}`, {
    selector: { matchLabels: { app } },
    action: "ALLOW",
    rules: [{ to: [{ operation: { methods: ["GET"], ports: ["9000"] } }] }],
  });
const denyGet = res("AuthorizationPolicy", "foo", "deny-get", {
  selector: { matchLabels: { app: "tcp-echo" } },
  action: "DENY",
  rules: [{ to: [{ operation: { methods: ["GET"] } }] }],
});
const allowPorts = res("AuthorizationPolicy", "foo", "allow-ports", {
  selector: { matchLabels: { app: "tcp-echo" } },
  rules: [{ to: [{ operation: { ports: ["9000", "9001"] } }] }],
});

Deno.test("authorizationWarnings: ALLOW with methods on a TCP workload is dropped; DENY's methods ignored", () => {
  const ctx = buildPushContext([...tcpEcho, ...httpbin, allowGet("tcp-echo"), denyGet, allowPorts], {
    version: "1",
  });
  assert.deepEqual(ctx.authorizationWarnings, [
    "AuthorizationPolicy foo/allow-get-tcp-echo (ALLOW) spec.rules[0] has HTTP-only fields " +
    "(to[0].operation.methods) and applies to workload foo/tcp-echo-1 ports 9000 (TCP), 9001 (TCP): " +
    "the rule is dropped there (matches nothing, so it allows no connection)",
    "AuthorizationPolicy foo/deny-get (DENY) spec.rules[0] has HTTP-only fields (to[0].operation.methods) " +
    "and applies to workload foo/tcp-echo-1 ports 9000 (TCP), 9001 (TCP): those fields are ignored there " +
    "(the rule matches more connections)",
  ]);
});

Deno.test("authorizationWarnings: none for an HTTP-only workload, none for L4 rules", () => {
  const ctx = buildPushContext([...tcpEcho, ...httpbin, allowGet("httpbin"), allowPorts], { version: "1" });
  assert.deepEqual(ctx.authorizationWarnings, []);
});

Deno.test("authorizationWarnings: a port without protocol (auto-detect) counts; a namespace-wide policy too", () => {
  const auto = res("ServiceEntry", "foo", "db", {
    hosts: ["db.foo.svc.cluster.local"],
    ports: [{ name: "db", number: 5432 }],
    location: "MESH_INTERNAL",
    resolution: "STATIC",
    workloadSelector: { labels: { app: "db" } },
  });
  const db = res("WorkloadEntry", "foo", "db-1", { address: "10.1.0.4", labels: { app: "db" } });
  const nsWide = res("AuthorizationPolicy", "foo", "jwt-only", {
    rules: [{ from: [{ source: { requestPrincipals: ["*"] } }] }],
  });
  const ctx = buildPushContext([auto, db, ...httpbin, nsWide], { version: "1" });
  assert.equal(ctx.authorizationWarnings.length, 1);
  assert.match(
    ctx.authorizationWarnings[0],
    /^AuthorizationPolicy foo\/jwt-only \(ALLOW\) spec\.rules\[0\] has HTTP-only fields \(from\[0\]\.source\.requestPrincipals\) and applies to workload foo\/db-1 ports 5432 \(UNKNOWN\): the rule is dropped/,
  );
});

Deno.test("authorizationWarnings: a policy over many TCP workloads names five and counts the rest", () => {
  const many = Array.from(
    { length: 7 },
    (_, i) =>
      res("WorkloadEntry", "foo", `tcp-echo-${i + 1}`, {
        address: `10.1.0.${10 + i}`,
        labels: { app: "tcp-echo" },
      }),
  );
  const ctx = buildPushContext([tcpEcho[0], ...many, denyGet], { version: "1" });
  assert.equal(ctx.authorizationWarnings.length, 1);
  assert.match(
    ctx.authorizationWarnings[0],
    /applies to workload foo\/tcp-echo-1 ports 9000 \(TCP\), 9001 \(TCP\); .*foo\/tcp-echo-5 ports [^;]*; 2 more workloads: those fields are ignored/,
  );
});
