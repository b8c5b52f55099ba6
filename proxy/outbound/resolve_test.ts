import assert from "node:assert/strict";
import type { ServiceInfo } from "../runtime/snapshot.ts";
import { parseAuthority, resolveHost, resolveService } from "./resolve.ts";
import { serviceInfo } from "../runtime/snapshot_test_support.ts";

function svc(
  name: string,
  namespace: string,
  ports: number[],
  hosts?: string[],
  addresses: string[] = [],
): ServiceInfo {
  return serviceInfo({
    name,
    namespace,
    hosts,
    addresses,
    ports: ports.map((number) => ({ name: `http-${number}`, number })),
  });
}

const snapshot = {
  services: {
    "foo/httpbin": svc("httpbin", "foo", [8000], undefined, ["10.96.0.10"]),
    "bar/httpbin": svc("httpbin", "bar", [8000, 80]),
    "foo/web": svc("web", "foo", [80]),
    "ext/api": svc("api", "ext", [443, 80], ["api.example.com"]),
    "baz/deep": svc("deep", "baz", [80], ["deep.baz.svc.corp.internal"]),
  },
};

const cases: [authority: string, ns: string | undefined, expect: string][] = [
  // [authority, proxy namespace, "key:port" or "404"/"400"]
  ["httpbin.foo:8000", "foo", "foo/httpbin:8000"],
  ["httpbin.foo:8000", "bar", "foo/httpbin:8000"],
  ["httpbin.foo.svc:8000", "bar", "foo/httpbin:8000"],
  ["httpbin.foo.svc.cluster.local:8000", "bar", "foo/httpbin:8000"],
  ["httpbin.foo.svc.cluster.local.:8000", "bar", "foo/httpbin:8000"],
  ["HTTPBIN.Foo:8000", "foo", "foo/httpbin:8000"],
  ["httpbin:8000", "foo", "foo/httpbin:8000"],
  ["httpbin:8000", "bar", "bar/httpbin:8000"],
  ["httpbin", "bar", "bar/httpbin:80"],
  ["httpbin:8000", "qux", "404"],
  ["httpbin:8000", undefined, "404"],
  ["httpbin.foo", "foo", "404"], // no port 80 on foo/httpbin
  ["httpbin.foo:9000", "foo", "404"],
  ["web.foo", undefined, "foo/web:80"],
  ["web", "foo", "foo/web:80"],
  ["api.example.com", "foo", "ext/api:80"],
  ["api.example.com:443", "foo", "ext/api:443"],
  ["deep.baz", "foo", "baz/deep:80"],
  ["deep", "baz", "baz/deep:80"],
  ["10.96.0.10:8000", "bar", "foo/httpbin:8000"],
  ["10.96.0.11:8000", "bar", "404"],
  ["nothing.example", "foo", "404"],
  ["", "foo", "400"],
  ["httpbin.foo:", "foo", "400"],
  ["httpbin.foo:0", "foo", "400"],
  ["httpbin.foo:70000", "foo", "400"],
  ["httpbin.foo:80:80", "foo", "400"],
  ["user@httpbin.foo", "foo", "400"],
  ["httpbin..foo", "foo", "400"],
  ["[::1", "foo", "400"],
  ["[::1]:8000", "foo", "404"],
  ["httpbin foo", "foo", "400"],
];

for (const [authority, ns, expect] of cases) {
  Deno.test(`resolveHost(${JSON.stringify(authority)}, ${ns}) → ${expect}`, () => {
    const r = resolveHost(authority, ns, snapshot);
    if (r.ok) assert.equal(`${r.key}:${r.port.number}`, expect);
    else {
      assert.equal(String(r.status), expect, r.reason);
      assert.ok(r.reason.length > 0);
    }
  });
}

Deno.test("resolveHost: the reasons name the host, the searched names and the ports", () => {
  const unknown = resolveHost("nope:8000", "foo", snapshot);
  assert.ok(!unknown.ok);
  assert.match(unknown.reason, /unknown outbound host "nope:8000"/);
  assert.match(unknown.reason, /nope\.foo\.svc\.cluster\.local/);
  const port = resolveHost("httpbin.foo:9000", "foo", snapshot);
  assert.ok(!port.ok);
  assert.match(port.reason, /foo\/httpbin .* has no port 9000; its ports: 8000/);
  const bad = resolveHost("a b", "foo", snapshot);
  assert.ok(!bad.ok);
  assert.match(bad.reason, /invalid host/);
});

Deno.test("resolveHost: the matched host is reported, and the result follows the snapshot", () => {
  const r = resolveHost("httpbin:8000", "foo", snapshot);
  assert.ok(r.ok);
  assert.equal(r.host, "httpbin.foo.svc.cluster.local");
  const empty = resolveHost("httpbin:8000", "foo", { services: {} });
  assert.ok(!empty.ok);
});

Deno.test("parseAuthority", () => {
  assert.deepEqual(parseAuthority("a.b:81", 80), { host: "a.b", port: 81 });
  assert.deepEqual(parseAuthority("a.b", 80), { host: "a.b", port: 80 });
  assert.deepEqual(parseAuthority("[fe80::1]:9", 80), { host: "fe80::1", port: 9 });
  assert.equal(parseAuthority("a/b", 80), null);
});

Deno.test("resolveService: a gateway destination resolves as its host:port authority does", () => {
  for (
    const [host, port] of [["httpbin.foo.svc.cluster.local", 8000], ["httpbin", 8000], [
      "api.example.com",
      443,
    ]] as const
  ) {
    assert.deepEqual(
      resolveService({ host, port }, "foo", snapshot),
      resolveHost(`${host}:${port}`, "foo", snapshot),
    );
  }
  const none = resolveService({ host: "httpbin.foo.svc.cluster.local", port: 0 }, "foo", snapshot);
  assert.ok(!none.ok);
  assert.match(none.reason, /has no port 0; its ports: 8000/);
});

Deno.test("resolveHost: a repeated lookup (answered from the per-snapshot memo) gives the first answer", () => {
  const fresh = () => ({ services: { ...snapshot.services } });
  const s = fresh();
  for (const [authority, ns] of cases) {
    const first = resolveHost(authority, ns, s);
    assert.deepEqual(resolveHost(authority, ns, s), first, `${authority} in ${ns}`);
    assert.deepEqual(first, resolveHost(authority, ns, fresh()), `${authority} in ${ns}, new snapshot`);
  }
  // The namespace is part of the memo's key: a short name resolves in each proxy's own namespace.
  const foo = resolveHost("httpbin:8000", "foo", s), bar = resolveHost("httpbin:8000", "bar", s);
  assert.ok(foo.ok && bar.ok);
  assert.equal(foo.key, "foo/httpbin");
  assert.equal(bar.key, "bar/httpbin");
});
