import assert from "node:assert/strict";
import * as jose from "jose";
import { BootstrapTokenIssuer } from "../../shared/internal/ca/bootstrap_tokens.ts";
import { BOOTSTRAP_TOKEN_PATH, bootstrapTokenHandler, isLoopback } from "./token_endpoint.ts";
import { tempDir } from "./test_support.ts";

Deno.test("isLoopback", () => {
  for (const h of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"]) {
    assert.ok(isLoopback(h), h);
  }
  for (const h of ["10.0.0.1", "0.0.0.0", "::", "evil.com", "127.0.0.1.evil.com", "localhost.evil.com", ""]) {
    assert.ok(!isLoopback(h), h);
  }
});

async function withHandler(
  fn: (
    h: ReturnType<typeof bootstrapTokenHandler>,
    issued: string[],
    issuer: BootstrapTokenIssuer,
  ) => Promise<void>,
) {
  const { dir, cleanup } = await tempDir();
  try {
    const issuer = await BootstrapTokenIssuer.open(dir, { audiences: ["mesh-ca"] });
    const issued: string[] = [];
    const h = bootstrapTokenHandler({
      issue: (r) => issuer.issue(r),
      onIssued: (t, peer) => issued.push(`${t.namespace}/${t.serviceAccount} to ${peer}`),
    });
    await fn(h, issued, issuer);
  } finally {
    await cleanup();
  }
}

const url = `http://127.0.0.1:8080${BOOTSTRAP_TOKEN_PATH}`;
const post = (body: unknown, headers: Record<string, string> = {}) =>
  new Request(url, {
    method: "POST",
    headers: { "content-type": "application/json", host: "127.0.0.1:8080", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

Deno.test("token endpoint: a loopback POST gets a token for the asked identity", async () => {
  await withHandler(async (h, issued, issuer) => {
    const res = await h(
      post({ namespace: "foo", serviceAccount: "sleep", durationSeconds: 600 }),
      "127.0.0.1",
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("cache-control"), "no-store");
    const body = await res.json();
    assert.equal(body.namespace, "foo");
    const { payload } = await jose.jwtVerify(body.token, issuer.verificationKey, { audience: "mesh-ca" });
    assert.equal(payload.sub, "system:serviceaccount:foo:sleep");
    assert.equal(payload.exp! - payload.iat!, 600);
    assert.deepEqual(issued, ["foo/sleep to 127.0.0.1"]);
  });
});

Deno.test("token endpoint: non-loopback peers, rebinding hosts, browsers, wrong method or type are refused", async () => {
  await withHandler(async (h, issued) => {
    const ok = { namespace: "foo", serviceAccount: "sleep" };
    const cases: [Request, string, number][] = [
      [post(ok), "10.1.2.3", 403],
      [post(ok, { host: "attacker.example:8080" }), "127.0.0.1", 403],
      [post(ok, { origin: "https://attacker.example" }), "127.0.0.1", 403],
      [post(ok, { "sec-fetch-site": "cross-site" }), "127.0.0.1", 403],
      [new Request(url, { headers: { host: "127.0.0.1:8080" } }), "127.0.0.1", 405],
      [post(ok, { "content-type": "text/plain" }), "127.0.0.1", 415],
      [post("{not json"), "127.0.0.1", 400],
      [post({ namespace: "foo" }), "127.0.0.1", 400],
      [post({ ...ok, durationSeconds: "1h" }), "127.0.0.1", 400],
      [post({ ...ok, durationSeconds: 10 ** 9 }), "127.0.0.1", 400],
      [post({ namespace: "a/b", serviceAccount: "sleep" }), "127.0.0.1", 400],
      [post("x".repeat(5000), { "content-length": "5000" }), "127.0.0.1", 413],
    ];
    for (const [req, peer, status] of cases) {
      const res = await h(req, peer);
      await res.body?.cancel();
      assert.equal(res.status, status, `${req.method} ${[...req.headers].join(" ")} from ${peer}`);
    }
    assert.deepEqual(issued, []);
  });
});

Deno.test({
  name: "token endpoint: served by Deno.serve on 127.0.0.1, fetched as meshctl would",
  fn: async () => {
    await withHandler(async (h) => {
      const server = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen() {} },
        (req, info) =>
          new URL(req.url).pathname === BOOTSTRAP_TOKEN_PATH
            ? h(req, info.remoteAddr.hostname)
            : new Response("not found", { status: 404 }),
      );
      try {
        const res = await fetch(`http://127.0.0.1:${server.addr.port}${BOOTSTRAP_TOKEN_PATH}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ namespace: "vm", serviceAccount: "legacy" }),
        });
        assert.equal(res.status, 200);
        assert.match((await res.json()).token, /^eyJ/);
      } finally {
        await server.shutdown();
      }
    });
  },
});
