/**
 * Debian's redis-server and redis-cli through sidecars in the local mesh lab, under STRICT mTLS:
 *
 * - redis in foo with a sidecar (`redis-server` on 127.0.0.1:6379, its Service port named `redis`,
 *   which Istio's protocol selection reads as Redis, carried as TCP);
 * - sleep in foo and sleep in bar with sidecars, the clients (`redis-cli -h redis.foo`);
 * - an unproxied client in legacy.
 *
 * Steps: PING, SET/GET and a 4 MiB value (its SHA-256 read back) from both proxied clients, the
 * plain-text client reset; an ALLOW by principal (foo's sleep only): foo's sleep still served, bar's
 * refused; a DENY by principal (foo's sleep): foo's sleep refused, bar's served. A refused redis-cli
 * fails fast: the connection is closed at once (well under its timeout), with no reply.
 *
 * Lab `rd<pid>`, subnet 10.226.1.0/24.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { labUnavailable } from "../../deploy/lab/mod.ts";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import {
  inWorkload,
  type RealLab,
  setPolicies,
  strictPeerAuthentication,
  until,
  withRealLab,
} from "./real_software_support.ts";

const unavailable = labUnavailable() ?? commandMissing("redis-server") ?? commandMissing("redis-cli");

const TOPOLOGY = `namespaces:
  - {name: foo, injection: enabled}
  - {name: bar, injection: enabled}
  - {name: legacy, injection: disabled}
workloads:
  - name: redis
    namespace: foo
    serviceAccount: redis
    command: [/usr/bin/redis-server, --bind, "$(BIND_IP)", --port, "6379", --save, "", --appendonly, "no",
      --protected-mode, "no", --dir, /tmp]
    containerPorts: [6379]
    services: [{name: redis, ports: [{name: redis, port: 6379}]}]
  - {name: sleep, namespace: foo, serviceAccount: sleep, command: [sleep, infinity]}
  - {name: sleep, namespace: bar, serviceAccount: sleep, command: [sleep, infinity]}
  - {name: sleep, namespace: legacy, command: [sleep, infinity]}
`;

const policy = (name: string, action: string, principal: string) =>
  `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ${name}, namespace: foo}
spec:
  selector: {matchLabels: {app: redis}}
  action: ${action}
  rules: [{from: [{source: {principals: ["${principal}"]}}]}]
`;

const FILES = {
  "strict.yaml": strictPeerAuthentication("mesh-system"),
  "allow-foo-sleep.yaml": policy("redis-allow", "ALLOW", "cluster.local/ns/foo/sa/sleep"),
  "deny-foo-sleep.yaml": policy("redis-deny", "DENY", "cluster.local/ns/foo/sa/sleep"),
};

/** redis-cli against redis.foo from `from` with `args`; 10 s at most (Debian 12's redis-cli 7.0 has no -t). */
function cli(env: RealLab, from: string, args: string) {
  return inWorkload(env, from, `redis-cli -h redis.foo -p 6379 ${args}`, 10_000);
}

/** "PONG", or "refused" when redis-cli got no reply and ended at once, or what else happened. */
async function ping(env: RealLab, from: string): Promise<string> {
  const r = await cli(env, from, "PING");
  if (r.code === 0 && r.stdout.trim() === "PONG") return "PONG";
  // What redis-cli says when the connection is closed or reset before a reply (never a usage error).
  if (/Server closed the connection|Connection reset by peer|Connection refused/.test(r.stdout + r.stderr)) {
    return r.ms < 2000 ? "refused" : `refused slowly (${r.ms} ms)`;
  }
  return `exit ${r.code}: ${(r.stdout + r.stderr).trim()}`;
}

type Want = Record<string, string>;

function expectPings(env: RealLab, want: Want): Promise<number> {
  return until(JSON.stringify(want), async () => {
    const froms = Object.keys(want);
    const got = await Promise.all(froms.map((f) => ping(env, f)));
    return froms.every((f, i) => got[i] === want[f])
      ? undefined
      : `got ${JSON.stringify(Object.fromEntries(froms.map((f, i) => [f, got[i]])))}`;
  });
}

/** SET/GET of a short value and of a 4 MiB one (random bytes as base64), read back byte for byte. */
async function setGet(env: RealLab, from: string, key: string): Promise<void> {
  const set = await cli(env, from, `SET ${key}-short "hello from ${from}"`);
  assert.equal(set.stdout.trim(), "OK", `${from} SET: ${set.stdout}${set.stderr}`);
  const get = await cli(env, from, `--raw GET ${key}-short`);
  assert.equal(get.stdout.trim(), `hello from ${from}`);
  const big = join(env.dir, `${key}.big`);
  const bytes = new Uint8Array(3 * 1024 * 1024);
  for (let i = 0; i < bytes.length; i += 65536) crypto.getRandomValues(bytes.subarray(i, i + 65536));
  const value = btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));
  await Deno.writeTextFile(big, value);
  const setBig = await cli(env, from, `-x SET ${key}-big < ${big}`);
  assert.equal(setBig.stdout.trim(), "OK", `${from} SET 4 MiB: ${setBig.stdout}${setBig.stderr}`);
  const sum = async (text: string) =>
    Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))))
      .map((b) => b.toString(16).padStart(2, "0")).join("");
  const getBig = await inWorkload(
    env,
    from,
    `redis-cli -h redis.foo -p 6379 --raw GET ${key}-big | head -c ${value.length} | sha256sum`,
  );
  assert.equal(getBig.stdout.split(" ")[0], await sum(value), `${from}: the 4 MiB value read back differs`);
}

Deno.test(requires(unavailable, {
  name: "e2e: redis-server and redis-cli through sidecars under STRICT mTLS; ALLOW and DENY by principal",
  async fn(t) {
    await withRealLab("rd", "10.226.1.0/24", TOPOLOGY, FILES, async (env) => {
      await t.step(
        "STRICT: PING, SET/GET and a 4 MiB value from both proxied clients; plain text reset",
        async () => {
          await setPolicies(env, "strict.yaml");
          env.note(
            "strict",
            await expectPings(env, { "foo/sleep": "PONG", "bar/sleep": "PONG", "legacy/sleep": "refused" }),
          );
          await setGet(env, "foo/sleep", "foo");
          await setGet(env, "bar/sleep", "bar");
        },
      );

      await t.step("ALLOW principal foo/sleep: bar's sleep refused at once", async () => {
        await setPolicies(env, "strict.yaml", "allow-foo-sleep.yaml");
        env.note("allow", await expectPings(env, { "foo/sleep": "PONG", "bar/sleep": "refused" }));
        await setGet(env, "foo/sleep", "foo-allowed");
      });

      await t.step("DENY principal foo/sleep: foo's sleep refused at once, bar's served", async () => {
        await setPolicies(env, "strict.yaml", "deny-foo-sleep.yaml");
        env.note("deny", await expectPings(env, { "foo/sleep": "refused", "bar/sleep": "PONG" }));
        const r = await cli(env, "foo/sleep", "GET foo-short");
        assert.doesNotMatch(r.stdout, /hello/, "no data for a denied client");
      });
    });
  },
}));
