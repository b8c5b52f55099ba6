import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { InboundPolicyFilter } from "../filters/mod.ts";
import { RecordingLog, snapshotOf } from "../inbound/test_support.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import type { FilterVerdict } from "../http/session_types.ts";
import { ISSUER, jwtPolicy } from "./mesh_pair_test_support.ts";
import { adaptRequestHead, applyVerdict, headerLinesToList, type HeaderList } from "./request_head.ts";

const GET: HeaderList = [
  [":method", "GET"],
  [":scheme", "http"],
  [":authority", "echo.foo:8000"],
  [":path", "/a/../b?q=1"],
];

Deno.test("adaptRequestHead: pseudo-headers as the request line and Host; refusals", () => {
  const a = adaptRequestHead([...GET, ["te", "trailers"], ["cookie", "a=1"], ["x-y", "z"], [
    "cookie",
    "b=2",
  ]]);
  assert.ok(a.ok);
  assert.equal(a.head.methodText(), "GET");
  assert.equal(a.head.targetText(), "/a/../b?q=1");
  assert.equal(a.head.get("host"), "echo.foo:8000");
  assert.equal(a.head.get("te"), "trailers");
  assert.equal(a.head.get("cookie"), "a=1; b=2");
  assert.deepEqual([...a.origin], [-1, 4, 6, -1]);

  const refused: [HeaderList, number][] = [
    [[[":method", "GET"], [":authority", "a"], [":path", "/x#frag"]], 400],
    [[[":method", "GET"], [":authority", "a"], [":path", "/x y"]], 400],
    [[[":method", "G(T"], [":authority", "a"], [":path", "/"]], 400],
    [[[":method", "get"], [":authority", "a"], [":path", "/"]], 400],
    [[[":method", "GET"], [":authority", "a"]], 400],
    [[[":method", "GET"], [":authority", "a"], [":path", ""]], 400],
    [[[":authority", "a"], [":path", "/"]], 400],
    [[[":method", "CONNECT"], [":authority", "a:443"]], 501],
    [[[":method", "CONNECT"], [":protocol", "websocket"], [":authority", "a"], [":path", "/"]], 501],
    [[...GET, ["host", "other.foo"]], 400],
    [[...GET, ["content-length", "1, 2"]], 400],
    [[...GET, ["x-bad", "a\x00b"]], 400],
    // What would change the head's text: a space in :method or :path, a line break, a colon or a
    // space in a name, an upper-case name.
    [[[":method", "GET /admin"], [":authority", "a"], [":path", "HTTP/1.1"]], 400],
    [[[":method", "GET"], [":authority", "a"], [":path", "/public /admin"]], 400],
    [[...GET, ["x-a: b", "v"]], 400],
    [[...GET, ["x a", "v"]], 400],
    [[...GET, ["X-Up", "v"]], 400],
    [[...GET, ["x-v", "a\r\nx-admin: 1"]], 400],
  ];
  for (const [headers, status] of refused) {
    const r = adaptRequestHead(headers);
    assert.ok(!r.ok, JSON.stringify(headers));
    assert.equal(r.status, status, `${JSON.stringify(headers)}: ${r.reason}`);
  }
  // The same host in another case is the same authority; the default applies only without either.
  assert.ok(adaptRequestHead([...GET, ["host", "ECHO.foo:8000"]]).ok);
  const d = adaptRequestHead([[":method", "GET"], [":path", "/"]], "127.0.0.1:9");
  assert.ok(d.ok);
  assert.equal(d.head.get("host"), "127.0.0.1:9");
});

Deno.test("applyVerdict: drops, additions, target and authority from a verdict", () => {
  const headers: HeaderList = [...GET, ["authorization", "Bearer x"], ["host", "echo.foo:8000"], [
    "x-k",
    "v",
  ]];
  const a = adaptRequestHead(headers);
  assert.ok(a.ok);
  for (let i = 0; i < a.head.count; i++) if (a.head.name(i) === "authorization") a.head.drop[i] = 1;
  const verdict: FilterVerdict = {
    reply: null,
    addFields: new TextEncoder().encode("x-jwt-sub: user-1\r\n"),
    target: new TextEncoder().encode("/b?q=1"),
    host: new TextEncoder().encode("echo.foo"),
  };
  assert.deepEqual(applyVerdict(headers, a, verdict), [
    [":method", "GET"],
    [":scheme", "http"],
    [":authority", "echo.foo"],
    [":path", "/b?q=1"],
    ["x-k", "v"],
    ["x-jwt-sub", "user-1"],
  ]);
  assert.deepEqual(applyVerdict(GET, adaptRequestHead(GET) as never, null), GET);
  assert.deepEqual(headerLinesToList('www-authenticate: Bearer realm="x"\r\nX-A:  b \r\n'), [
    ["www-authenticate", 'Bearer realm="x"'],
    ["x-a", "b"],
  ]);
});

Deno.test("the HTTP/1.1 filter chain decides HTTP/2 requests: normalization, JWT, authorization", async () => {
  const ISS = ISSUER;
  const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256" }] });
  const base = snapshotOf("PERMISSIVE", undefined);
  const snapshot: RuntimeSnapshot = {
    ...base,
    authorizations: {
      "foo/deny": {
        name: "deny",
        namespace: "foo",
        action: "DENY",
        rules: [{ to: [{ operation: { paths: ["/admin"] } }] }],
      },
    },
    jwtPolicies: { "foo/jwt": jwtPolicy(jwks) },
  };
  const filter = new InboundPolicyFilter(() => snapshot, {
    principal: "spiffe://cluster.local/ns/foo/sa/sleep",
    peerIp: "127.0.0.1",
    localIp: "127.0.0.1",
    port: 8000,
    sni: undefined,
    peer: "127.0.0.1:1",
  }, new RecordingLog());
  const decide = async (headers: HeaderList) => {
    const a = adaptRequestHead(headers);
    assert.ok(a.ok);
    const v = await filter.check(a.head);
    return { verdict: v, forwarded: applyVerdict(headers, a, v) };
  };
  const req = (path: string, extra: HeaderList = []): HeaderList => [
    [":method", "POST"],
    [":scheme", "http"],
    [":authority", "echo.foo"],
    [":path", path],
    ["content-type", "application/grpc"],
    ...extra,
  ];
  // The denied path, reached through a dot segment: normalized first, then denied.
  assert.equal((await decide(req("/x/../admin"))).verdict?.reply?.status, 403);
  const ok = await decide(req("/x/../svc/Method", [["x-jwt-sub", "forged"]]));
  assert.equal(ok.verdict?.reply, null);
  assert.equal(ok.forwarded.find(([n]) => n === ":path")?.[1], "/svc/Method");
  assert.ok(!ok.forwarded.some(([n]) => n === "x-jwt-sub"), "a client's claim header is removed");
  const token = await new SignJWT({ iss: ISS, sub: "user-1", exp: Math.floor(Date.now() / 1000) + 60 })
    .setProtectedHeader({ alg: "RS256", kid: "k1" }).sign(privateKey);
  const valid = await decide(req("/svc/Method", [["authorization", `Bearer ${token}`]]));
  assert.equal(valid.verdict?.reply, null);
  assert.ok(!valid.forwarded.some(([n]) => n === "authorization"), "the verified token is removed");
  assert.deepEqual(valid.forwarded.filter(([n]) => n === "x-jwt-sub"), [["x-jwt-sub", "user-1"]]);
  const bad = await decide(req("/svc/Method", [["authorization", `Bearer ${token.slice(0, -4)}AAAA`]]));
  assert.equal(bad.verdict?.reply?.status, 401);
});
