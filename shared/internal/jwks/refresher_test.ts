/** The key set refresher against a real JWKS server on loopback, fetching with httpGet. */
import assert from "node:assert/strict";
import { httpGet } from "./http_get.ts";
import { keptAfterFailure, type KeySetFetchEvent, KeySetRefresher, parseKeySet } from "./refresher.ts";
import { keySetText, startJwksServer, until } from "./test_support.ts";

function recorder(refreshIntervalMs: number) {
  const events: KeySetFetchEvent[] = [];
  let changes = 0;
  const refresher = new KeySetRefresher({
    refreshIntervalMs,
    retryInitialMs: 50,
    fetch: (s) => httpGet(s.key, { timeoutMs: s.timeoutMs }),
    onChange: () => changes++,
    onFetch: (e) => events.push(e),
  });
  return { refresher, events, changes: () => changes };
}

const compact = (text: string) => JSON.stringify(JSON.parse(text));

Deno.test("parseKeySet: compacts a JWK Set and counts its keys; refuses what is not one", () => {
  assert.deepEqual(parseKeySet('{ "keys": [ {"kty":"EC"}, {} ] }'), {
    text: '{"keys":[{"kty":"EC"},{}]}',
    keyCount: 2,
  });
  assert.throws(() => parseKeySet("<html>"), /the body is not JSON/);
  assert.throws(() => parseKeySet('{"key": []}'), /the body has no "keys" list/);
  assert.throws(() => parseKeySet("null"), /no "keys" list/);
});

Deno.test("KeySetRefresher fetches, refreshes, keeps the last good keys through failures, and recovers", async () => {
  const srv = startJwksServer();
  const first = await keySetText("k1");
  srv.state.body = first;
  const r = recorder(200);
  try {
    assert.deepEqual(r.refresher.status(), []);
    r.refresher.sync([{ key: srv.url, timeoutMs: 1000 }]);
    assert.equal(r.refresher.status()[0].state, "FETCHING");
    await until(() => r.changes() === 1, "the first fetch");
    assert.equal(r.refresher.keys().get(srv.url), compact(first));
    const ok = r.refresher.status()[0];
    assert.equal(ok.state, "OK");
    assert.equal(ok.keyCount, 1);
    assert.ok(ok.lastSuccess && ok.nextFetch);
    // The server fails: retries with backoff, the keys stay.
    srv.state.status = 503;
    const failuresBefore = r.events.filter((e) => !e.ok).length;
    await until(() => r.events.filter((e) => !e.ok).length >= failuresBefore + 3, "three failed fetches");
    const failed = r.events.filter((e) => !e.ok);
    assert.match(failed[0].error!, /HTTP status 503/);
    assert.deepEqual(failed.slice(0, 3).map((e) => e.retryInMs), [50, 100, 200]);
    assert.equal(r.refresher.keys().get(srv.url), compact(first));
    const failing = r.refresher.status()[0];
    assert.equal(failing.state, "FAILING");
    assert.equal(failing.hasKeys, true);
    assert.ok(failing.consecutiveFailures >= 3);
    assert.match(failing.lastError!, /HTTP status 503/);
    assert.equal(r.changes(), 1);
    // A body that is not a key set is a failure too.
    srv.state.status = 200;
    srv.state.body = "<html>";
    await until(() => r.events.some((e) => !e.ok && /not JSON/.test(e.error!)), "a bad body");
    assert.equal(r.refresher.keys().get(srv.url), compact(first));
    // Recovery with rotated keys: a change.
    const second = await keySetText("k2");
    srv.state.body = second;
    await until(() => r.changes() === 2, "the rotated keys");
    assert.equal(r.refresher.keys().get(srv.url), compact(second));
    assert.equal(r.refresher.status()[0].consecutiveFailures, 0);
    // The same keys again: no change.
    const fetched = r.events.length;
    await until(() => r.events.length > fetched + 1, "refreshes");
    assert.equal(r.changes(), 2);
  } finally {
    r.refresher.stop();
    await srv.stop();
  }
});

Deno.test("KeySetRefresher: a per-source refresh interval, and sources no longer given are dropped", async () => {
  const srv = startJwksServer();
  srv.state.body = await keySetText("k1");
  const r = recorder(60_000);
  try {
    r.refresher.sync([{ key: srv.url, timeoutMs: 1000, refreshIntervalMs: 100 }]);
    await until(() => r.events.filter((e) => e.ok).length >= 3, "refreshes every 100 ms");
    r.refresher.sync([]);
    assert.equal(r.refresher.keys().size, 0);
    assert.deepEqual(r.refresher.status(), []);
    const count = srv.state.userAgents.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(srv.state.userAgents.length, count, "no fetch after the source was dropped");
  } finally {
    r.refresher.stop();
    await srv.stop();
  }
});

Deno.test("KeySetRefresher: a failure says it keeps keys only when it has some (meshd restarted, server down)", async () => {
  const srv = startJwksServer();
  srv.state.status = 503;
  const r = recorder(200);
  try {
    r.refresher.sync([{ key: srv.url, timeoutMs: 1000 }]);
    await until(() => r.events.length >= 1, "the first failed fetch");
    assert.deepEqual([r.events[0].ok, r.events[0].hasKeys], [false, false]);
    assert.equal(keptAfterFailure(r.events[0]), "no good key set yet");
    srv.state.status = 200;
    srv.state.body = await keySetText("k1");
    await until(() => r.changes() === 1, "a good fetch");
    srv.state.status = 503;
    await until(() => r.events.at(-1)?.ok === false, "a failure after the good fetch");
    assert.equal(r.events.at(-1)!.hasKeys, true);
    assert.equal(keptAfterFailure(r.events.at(-1)!), "keeping the last good key set");
  } finally {
    r.refresher.stop();
    await srv.stop();
  }
});
