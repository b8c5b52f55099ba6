/**
 * The JWKS resolver against real HTTP and HTTPS servers on loopback (Deno.serve), serving key sets
 * made with jose.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair } from "jose";
import { type JwksFetchEvent, JwksResolver, jwksSourceKey } from "./resolver.ts";

async function keySet(kid: string): Promise<string> {
  const { publicKey } = await generateKeyPair("ES256", { extractable: true });
  return JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: "ES256" }] });
}

/** A JWKS server whose answer the test changes: a body, or a status to fail with. */
function jwksServer(tls?: { cert: string; key: string }) {
  const state = { body: "", status: 200, hits: 0 };
  let base = "";
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen() {},
    ...tls,
  }, (req): Response => {
    state.hits++;
    const url = new URL(req.url);
    if (url.pathname === "/.well-known/openid-configuration") {
      return Response.json({ issuer: base, jwks_uri: `${base}/keys` });
    }
    return new Response(state.body, { status: state.status });
  });
  base = `${tls ? "https" : "http"}://127.0.0.1:${server.addr.port}`;
  return { state, base, url: `${base}/keys`, stop: () => server.shutdown() };
}

function recorder(options: { refreshIntervalMs?: number; insecureSkipVerify?: boolean } = {}) {
  const events: JwksFetchEvent[] = [];
  let changes = 0;
  const resolver = new JwksResolver({
    refreshIntervalMs: options.refreshIntervalMs ?? 60_000,
    insecureSkipVerify: options.insecureSkipVerify ?? false,
    retryInitialMs: 50,
    onChange: () => changes++,
    onFetch: (e) => events.push(e),
  });
  return { resolver, events, changes: () => changes };
}

async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("jwksSourceKey: jwksUri, OIDC discovery for an issuer alone, nothing for inline keys", () => {
  assert.equal(jwksSourceKey({ issuer: "i", jwksUri: "https://x/k" }), "https://x/k");
  assert.equal(jwksSourceKey({ issuer: "https://idp" }), "oidc:https://idp");
  assert.equal(jwksSourceKey({ issuer: "i", jwks: '{"keys":[]}' }), undefined);
});

Deno.test("JwksResolver fetches, refreshes, keeps the last good keys through failures, and recovers", async () => {
  const srv = jwksServer();
  const first = await keySet("k1");
  srv.state.body = first;
  const r = recorder({ refreshIntervalMs: 200 });
  try {
    r.resolver.sync([{ issuer: "i", jwksUri: srv.url }]);
    await until(() => r.changes() === 1, "the first fetch");
    assert.equal(r.resolver.keys().get(srv.url), JSON.stringify(JSON.parse(first)));
    // The server fails: retries with backoff, the keys stay.
    srv.state.status = 503;
    const failuresBefore = r.events.filter((e) => !e.ok).length;
    await until(() => r.events.filter((e) => !e.ok).length >= failuresBefore + 3, "three failed fetches");
    const failed = r.events.filter((e) => !e.ok);
    assert.match(failed[0].error!, /HTTP status 503/);
    assert.deepEqual(failed.slice(0, 3).map((e) => e.retryInMs), [50, 100, 200]);
    assert.equal(r.resolver.keys().get(srv.url), JSON.stringify(JSON.parse(first)));
    assert.equal(r.changes(), 1);
    // A body that is not a key set is a failure too.
    srv.state.status = 200;
    srv.state.body = "<html>";
    await until(() => r.events.some((e) => !e.ok && /not JSON/.test(e.error!)), "a bad body");
    assert.equal(r.resolver.keys().get(srv.url), JSON.stringify(JSON.parse(first)));
    // Recovery with rotated keys: a change.
    const second = await keySet("k2");
    srv.state.body = second;
    await until(() => r.changes() === 2, "the rotated keys");
    assert.equal(r.resolver.keys().get(srv.url), JSON.stringify(JSON.parse(second)));
    // The same keys again: no change.
    const fetched = r.events.length;
    await until(() => r.events.length > fetched + 1, "refreshes");
    assert.equal(r.changes(), 2);
  } finally {
    r.resolver.stop();
    await srv.stop();
  }
});

Deno.test("JwksResolver uses OIDC discovery for an issuer without keys, and drops unused sources", async () => {
  const srv = jwksServer();
  srv.state.body = await keySet("k1");
  const r = recorder();
  try {
    r.resolver.sync([{ issuer: srv.base }]);
    await until(() => r.changes() === 1, "the discovered keys");
    assert.ok(r.resolver.keys().get(`oidc:${srv.base}`)?.includes('"k1"'));
    r.resolver.sync([]);
    assert.equal(r.resolver.keys().size, 0);
  } finally {
    r.resolver.stop();
    await srv.stop();
  }
});

Deno.test("JwksResolver verifies HTTPS certificates unless JWKS_RESOLVER_INSECURE_SKIP_VERIFY", async () => {
  const dir = await Deno.makeTempDir();
  const out = await new Deno.Command("openssl", {
    args: [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      `${dir}/key.pem`,
      "-out",
      `${dir}/cert.pem`,
    ],
    stderr: "null",
  }).output();
  assert.ok(out.success, "openssl made a certificate");
  const srv = jwksServer({
    cert: await Deno.readTextFile(`${dir}/cert.pem`),
    key: await Deno.readTextFile(`${dir}/key.pem`),
  });
  srv.state.body = await keySet("k1");
  const strict = recorder();
  const insecure = recorder({ insecureSkipVerify: true });
  try {
    strict.resolver.sync([{ issuer: "i", jwksUri: srv.url }]);
    insecure.resolver.sync([{ issuer: "i", jwksUri: srv.url }]);
    await until(() => strict.events.length > 0 && insecure.changes() === 1, "both resolvers");
    assert.equal(strict.events[0].ok, false);
    assert.match(strict.events[0].error!, /certificate/i);
    assert.equal(strict.resolver.keys().size, 0);
    assert.equal(insecure.resolver.keys().size, 1);
  } finally {
    strict.resolver.stop();
    insecure.resolver.stop();
    await srv.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
