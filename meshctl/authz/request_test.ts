import assert from "node:assert/strict";
import { SignJWT } from "jose";
import { type RequestFlags, requestFromFlags } from "./request.ts";

const base: RequestFlags = {
  method: "get",
  path: "/ip",
  port: "8000",
  header: [],
  trustDomain: "cluster.local",
};

Deno.test("requestFromFlags: method, port, headers, source principal", async () => {
  const cases: { flags: Partial<RequestFlags>; want: Record<string, unknown> }[] = [
    { flags: {}, want: { method: "GET", path: "/ip", port: 8000, headers: {} } },
    {
      flags: { header: ["X-Token=admin", "x-token=other", "a=b=c"], host: "httpbin.foo" },
      want: {
        method: "GET",
        path: "/ip",
        port: 8000,
        headers: { "x-token": "admin,other", a: "b=c" },
        host: "httpbin.foo",
      },
    },
    {
      flags: { sourcePrincipal: "cluster.local/ns/foo/sa/sleep", sourceIp: "10.0.0.1" },
      want: {
        method: "GET",
        path: "/ip",
        port: 8000,
        headers: {},
        sourcePrincipal: "spiffe://cluster.local/ns/foo/sa/sleep",
        sourceIp: "10.0.0.1",
      },
    },
    {
      flags: { sourceNamespace: "bar", trustDomain: "example.org" },
      want: {
        method: "GET",
        path: "/ip",
        port: 8000,
        headers: {},
        sourcePrincipal: "spiffe://example.org/ns/bar/sa/default",
      },
    },
  ];
  for (const c of cases) {
    assert.deepEqual(
      (await requestFromFlags({ ...base, ...c.flags })).request,
      c.want,
      JSON.stringify(c.flags),
    );
  }
});

Deno.test("requestFromFlags: bad flags are named", async () => {
  const cases: [Partial<RequestFlags>, RegExp][] = [
    [{ port: "http" }, /--port: "http" is not a port number/],
    [{ port: "70000" }, /--port: "70000"/],
    [{ header: ["noequals"] }, /--header: "noequals" is not name=value/],
    [{ sourcePrincipal: "a", sourceNamespace: "b" }, /--source-principal excludes/],
    [{ jwt: "[1]" }, /--jwt: \[1\]: .*No such file|--jwt: \[1\]/],
    [{ jwt: "{not json" }, /--jwt: \{not json: neither a claims JSON object nor a JWT/],
  ];
  for (const [flags, want] of cases) {
    await assert.rejects(requestFromFlags({ ...base, ...flags }), want, JSON.stringify(flags));
  }
});

Deno.test("requestFromFlags: --jwt takes claims JSON, or a file with a JWT (decoded, not verified)", async () => {
  const inline = await requestFromFlags({ ...base, jwt: '{"iss":"i","sub":"s","groups":["g1"]}' });
  assert.equal(inline.request.requestPrincipal, "i/s");
  assert.deepEqual(inline.request.claims, { iss: "i", sub: "s", groups: ["g1"] });
  assert.equal(inline.jwtNote, undefined);
  const token = await new SignJWT({ groups: ["group1"] }).setProtectedHeader({ alg: "HS256" })
    .setIssuer("testing@secure.istio.io").setSubject("testing@secure.istio.io")
    .sign(new TextEncoder().encode("a secret of thirty-two bytes....."));
  const file = await Deno.makeTempFile();
  try {
    await Deno.writeTextFile(file, token + "\n");
    const r = await requestFromFlags({ ...base, jwt: file });
    assert.equal(r.request.requestPrincipal, "testing@secure.istio.io/testing@secure.istio.io");
    assert.deepEqual(r.request.claims?.groups, ["group1"]);
    assert.match(r.jwtNote ?? "", /decoded, not verified/);
  } finally {
    await Deno.remove(file);
  }
});
