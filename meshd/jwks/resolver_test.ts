/**
 * meshd's JWKS resolver against real HTTP and HTTPS servers on loopback (Deno.serve): OIDC
 * discovery, JWKS_RESOLVER_INSECURE_SKIP_VERIFY, and the user agent that tells meshd's fetches from
 * proxies'. Refresh, backoff and last good keys: shared/internal/jwks/refresher_test.ts.
 */
import assert from "node:assert/strict";
import {
  keySetText as keySet,
  startJwksServer as jwksServer,
  until,
} from "../../shared/internal/jwks/test_support.ts";
import { type JwksFetchEvent, JwksResolver, jwksTimeoutMs, MESHD_JWKS_USER_AGENT } from "./resolver.ts";

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

Deno.test("jwksTimeoutMs: the rule's timeout, else 5 s", () => {
  assert.equal(jwksTimeoutMs({ timeout: "1.5s" }), 1500);
  assert.equal(jwksTimeoutMs({}), 5000);
  assert.equal(jwksTimeoutMs({ timeout: "0s" }), 5000);
});

Deno.test("JwksResolver uses OIDC discovery for an issuer without keys, and drops unused sources", async () => {
  const srv = jwksServer();
  srv.state.body = await keySet("k1");
  const r = recorder();
  try {
    r.resolver.sync([{ issuer: srv.base }]);
    await until(() => r.changes() === 1, "the discovered keys");
    assert.ok(r.resolver.keys().get(`oidc:${srv.base}`)?.includes('"k1"'));
    assert.deepEqual(srv.state.userAgents, [MESHD_JWKS_USER_AGENT, MESHD_JWKS_USER_AGENT]);
    assert.equal(r.resolver.status()[0].state, "OK");
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
