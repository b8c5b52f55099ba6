/**
 * The policies seed's PeerAuthentication rows ("Observable effects") end to end, through the local
 * mesh lab (deploy/lab): meshd in its own network namespace; httpbin (gunicorn) in foo with a
 * sidecar, on a container port bound to its service (8000 → 8080) and one no service targets
 * (9000); httpbin in bar with a sidecar; sleep in foo with a sidecar; sleep and httpbin in legacy
 * without. Clients are real curl run inside the workloads' namespaces (`lab exec`); policies are
 * files put into meshd's config directory with `lab apply` / `lab delete`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  execArgv,
  labApply,
  labDelete,
  labDown,
  type LabState,
  labUnavailable,
  labUp,
  probe,
  run,
  workloadOf,
  xfccOf,
} from "../../deploy/lab/mod.ts";
import { httpbinMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { figure } from "../../shared/internal/testing/figures.ts";

const unavailable = labUnavailable() ?? httpbinMissing();

/** The container port bound to the service httpbin.foo:8000. */
const BOUND = 8080;
/** A second container port of httpbin.foo, to the same app, that no service targets. */
const UNBOUND = 9000;

const HTTPBIN = "[/usr/bin/gunicorn, -b, '$(BIND_IP):8080', -k, gthread, --threads, '4', httpbin:app]";
const TOPOLOGY = `namespaces:
  - {name: foo, injection: enabled}
  - {name: bar, injection: enabled}
  - {name: legacy, injection: disabled}
workloads:
  - name: httpbin
    namespace: foo
    serviceAccount: httpbin
    command: [/usr/bin/gunicorn, -b, "$(BIND_IP):${BOUND}", -b, "$(BIND_IP):${UNBOUND}", -k, gthread, httpbin:app]
    containerPorts: [${BOUND}, ${UNBOUND}]
    services: [{name: httpbin, ports: [{name: http, port: 8000, targetPort: ${BOUND}}]}]
  - {name: sleep, namespace: foo, serviceAccount: sleep, command: [sleep, infinity]}
  - name: httpbin
    namespace: bar
    serviceAccount: httpbin
    command: ${HTTPBIN}
    containerPorts: [8080]
    services: [{name: httpbin, ports: [{name: http, port: 8000, targetPort: 8080}]}]
  - {name: sleep, namespace: legacy, command: [sleep, infinity]}
  - name: httpbin
    namespace: legacy
    command: ${HTTPBIN}
    containerPorts: [8080]
    services: [{name: httpbin, ports: [{name: http, port: 8000, targetPort: 8080}]}]
`;

function pa(namespace: string, name: string, spec: string): string {
  return `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: ${name}, namespace: ${namespace}}
spec: ${spec}
`;
}

const httpbinPolicy = (spec: string) =>
  pa("foo", "httpbin", `{selector: {matchLabels: {app: httpbin}}, ${spec}}`);
const POLICIES: Record<string, string> = {
  "pa-mesh.yaml": pa("mesh-system", "default", "{mtls: {mode: STRICT}}"),
  "pa-foo.yaml": pa("foo", "default", "{mtls: {mode: STRICT}}"),
  "pa-bar.yaml": pa("bar", "default", "{mtls: {mode: STRICT}}"),
  "pa-httpbin-strict.yaml": httpbinPolicy("mtls: {mode: STRICT}"),
  "pa-other.yaml": pa("foo", "other", "{selector: {matchLabels: {app: other}}, mtls: {mode: STRICT}}"),
  "pa-httpbin-disable.yaml": httpbinPolicy("mtls: {mode: DISABLE}"),
  "pa-port-bound.yaml": httpbinPolicy(`mtls: {mode: STRICT}, portLevelMtls: {${BOUND}: {mode: DISABLE}}`),
  "pa-port-unbound.yaml": httpbinPolicy(`mtls: {mode: STRICT}, portLevelMtls: {${UNBOUND}: {mode: DISABLE}}`),
};

/** An outcome as the rows compare it: "200", "reset" (000 with curl exit 56) or what else happened. */
type Outcome = string;

interface Env {
  lab: string;
  dir: string;
  state: LabState;
  applied: Set<string>;
}

const workload = (env: Env, ref: string) => workloadOf(env.state, ref);

async function outcome(env: Env, from: string, url: string): Promise<Outcome> {
  const p = await probe(workload(env, from), url, { timeoutS: 2 });
  if (p.exitCode === 56 && p.status === "000") return "reset";
  return p.exitCode === 0 ? p.status : `${p.status} (exit ${p.exitCode})`;
}

/** What the rows probe: the unproxied client to each server, and to foo's unbound port; sleep.foo to foo. */
const PROBES = {
  legacyFoo: (env: Env) => outcome(env, "legacy/sleep", "http://httpbin.foo:8000/ip"),
  legacyFooUnbound: (env: Env) =>
    outcome(env, "legacy/sleep", `http://${workload(env, "foo/httpbin").address}:${UNBOUND}/ip`),
  legacyBar: (env: Env) => outcome(env, "legacy/sleep", "http://httpbin.bar:8000/ip"),
  legacyLegacy: (env: Env) => outcome(env, "legacy/sleep", "http://httpbin.legacy:8000/ip"),
  sleepFoo: (env: Env) => outcome(env, "foo/sleep", "http://httpbin.foo:8000/ip"),
  sleepBar: (env: Env) => outcome(env, "foo/sleep", "http://httpbin.bar:8000/ip"),
};
type Want = Partial<Record<keyof typeof PROBES, Outcome>>;

/** Makes `names` (keys of POLICIES) the only policies applied: `lab apply` / `lab delete`. */
async function setPolicies(env: Env, ...names: string[]): Promise<void> {
  const gone = [...env.applied].filter((n) => !names.includes(n));
  if (gone.length > 0) await labDelete(env.lab, gone);
  const added = names.filter((n) => !env.applied.has(n));
  if (added.length > 0) await labApply(env.lab, added.map((n) => join(env.dir, n)));
  env.applied = new Set(names);
}

/** Polls (every 50 ms, at most `timeoutMs`) until every probe in `want` gives its outcome; returns the ms. */
async function expectOutcomes(env: Env, want: Want, timeoutMs = 3000): Promise<number> {
  const start = Date.now();
  for (;;) {
    const keys = Object.keys(want) as (keyof typeof PROBES)[];
    const got = await Promise.all(keys.map((k) => PROBES[k](env)));
    if (keys.every((k, i) => got[i] === want[k])) return Date.now() - start;
    if (Date.now() - start > timeoutMs) {
      const seen = Object.fromEntries(keys.map((k, i) => [k, got[i]]));
      throw new Error(`not ${JSON.stringify(want)} within ${timeoutMs} ms; last ${JSON.stringify(seen)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Asserts the unproxied client keeps getting 200 from foo for `ms` (a policy that must have no effect). */
async function expectUnaffected(env: Env, ms = 1000): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    assert.equal(await PROBES.legacyFoo(env), "200", `legacy client affected after ${Date.now() - start} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function xfcc(env: Env, from: string, to: string): Promise<string | undefined> {
  const p = await probe(workload(env, from), `http://httpbin.${to}:8000/headers`);
  assert.equal(p.status, "200", `${from} -> httpbin.${to}: ${p.status} exit ${p.exitCode}`);
  return xfccOf(p);
}

/** The upstream connections sleep.foo's sidecar opened so far, by kind (its /stats counters). */
async function upstreamCx(env: Env): Promise<{ mtls: number; plain: number }> {
  const [cmd, ...args] = execArgv(workload(env, "foo/sleep"), ["curl", "-s", "http://127.0.0.1:15000/stats"]);
  const stats = (await run(cmd, args)).stdout;
  const value = (name: string) => {
    const v = Number(
      new RegExp(`^listener\\.127\\.0\\.0\\.1_15001\\.${name}: (\\d+)$`, "m").exec(stats)?.[1],
    );
    assert.ok(Number.isInteger(v), `${name} in sleep.foo's /stats:\n${stats}`);
    return v;
  };
  return { mtls: value("upstream_cx_mtls_total"), plain: value("upstream_cx_plaintext_total") };
}

/**
 * Polls (every 50 ms, at most `timeoutMs`) sleep.foo -> httpbin.foo, each answer 200, until its sidecar
 * has opened a new plain-text upstream connection since `before`. A kept-alive mutual TLS connection
 * from an earlier row cannot pass this: the automatic mTLS decision is made when a connection opens.
 */
async function expectNewPlainUpstream(env: Env, before: { plain: number }, timeoutMs = 3000): Promise<void> {
  const start = Date.now();
  for (;;) {
    assert.equal(
      await PROBES.sleepFoo(env),
      "200",
      `sleep.foo -> httpbin.foo after ${Date.now() - start} ms`,
    );
    const now = await upstreamCx(env);
    if (now.plain > before.plain) return;
    if (Date.now() - start > timeoutMs) {
      throw new Error(`no new plain-text upstream connection within ${timeoutMs} ms: ${JSON.stringify(now)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Polls (every 50 ms, at most `timeoutMs`) until httpbin.foo sees sleep.foo's request with an XFCC
 * header (it came over mutual TLS) or without one (plain text), as `present` says.
 */
async function expectClientCertificate(env: Env, present: boolean, timeoutMs = 3000): Promise<void> {
  const start = Date.now();
  while ((await xfcc(env, "foo/sleep", "foo") !== undefined) !== present) {
    if (Date.now() - start > timeoutMs) {
      throw new Error(
        `sleep.foo -> httpbin.foo ${present ? "not over" : "still over"} mutual TLS after ${timeoutMs} ms`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

const timings: string[] = [];
const note = (row: string, ms: number) => timings.push(`${row}: ${ms} ms`);

Deno.test(requires(unavailable, {
  name: "e2e: PeerAuthentication rows of the policies seed, through the lab (meshd, sidecars, httpbin, curl)",
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "pa-e2e-" });
    const lab = `pa${Deno.pid}`;
    for (const [name, yaml] of Object.entries(POLICIES)) await Deno.writeTextFile(join(dir, name), yaml);
    await Deno.writeTextFile(join(dir, "topology.yaml"), TOPOLOGY);
    const started = Date.now();
    try {
      const state = await labUp(join(dir, "topology.yaml"), { name: lab, subnet: "10.251.0.0/24" });
      const env: Env = { lab, dir, state, applied: new Set() };
      note("lab up (meshd, 5 workloads, 3 sidecars ready)", Date.now() - started);

      await t.step(
        "1. no policy: all 200; automatic mTLS between proxied workloads (XFCC), none towards legacy",
        async () => {
          note(
            "row 1",
            await expectOutcomes(env, {
              legacyFoo: "200",
              legacyFooUnbound: "200",
              legacyBar: "200",
              legacyLegacy: "200",
              sleepFoo: "200",
              sleepBar: "200",
            }),
          );
          const x = await xfcc(env, "foo/sleep", "foo");
          assert.ok(x, "X-Forwarded-Client-Cert present from sleep.foo to httpbin.foo");
          assert.match(x, /(^|;)URI=spiffe:\/\/cluster\.local\/ns\/foo\/sa\/sleep(;|$)/);
          assert.match(x, /(^|;)By=spiffe:\/\/cluster\.local\/ns\/foo\/sa\/httpbin(;|$)/);
          assert.match(x, /(^|;)Hash=[0-9a-f]{64}(;|$)/);
          assert.match(
            (await xfcc(env, "foo/sleep", "bar"))!,
            /(^|;)By=spiffe:\/\/cluster\.local\/ns\/bar\/sa\/httpbin(;|$)/,
          );
          assert.equal(
            await xfcc(env, "foo/sleep", "legacy"),
            undefined,
            "plain text to the unproxied server",
          );
          assert.equal(
            await xfcc(env, "legacy/sleep", "foo"),
            undefined,
            "plain text from the unproxied client",
          );
        },
      );

      await t.step(
        "2. mesh-wide STRICT: unproxied client reset by every proxied server; unproxied server and proxied clients fine",
        async () => {
          await setPolicies(env, "pa-mesh.yaml");
          note(
            "row 2 apply",
            await expectOutcomes(env, {
              legacyFoo: "reset",
              legacyBar: "reset",
              legacyLegacy: "200",
              sleepFoo: "200",
              sleepBar: "200",
            }),
          );
          // The seed's exact symptom: status 000 and curl exit code 56.
          const p = await probe(workload(env, "legacy/sleep"), "http://httpbin.foo:8000/ip");
          assert.deepEqual([p.status, p.exitCode], ["000", 56]);
          await setPolicies(env);
          note("row 2 delete", await expectOutcomes(env, { legacyFoo: "200", legacyBar: "200" }));
        },
      );

      await t.step("3. namespace STRICT: only proxied servers of that namespace", async () => {
        await setPolicies(env, "pa-bar.yaml");
        await expectOutcomes(env, { legacyBar: "reset" });
        await expectUnaffected(env);
        await setPolicies(env, "pa-bar.yaml", "pa-foo.yaml");
        note(
          "row 3 apply",
          await expectOutcomes(env, { legacyFoo: "reset", legacyLegacy: "200", sleepFoo: "200" }),
        );
        await setPolicies(env, "pa-bar.yaml");
        note("row 3 delete", await expectOutcomes(env, { legacyFoo: "200", legacyBar: "reset" }));
        await setPolicies(env);
      });

      await t.step(
        "4. workload STRICT app=httpbin in foo: foo's httpbin only (not bar's); app=other: no effect",
        async () => {
          await setPolicies(env, "pa-other.yaml");
          await expectUnaffected(env);
          await setPolicies(env, "pa-other.yaml", "pa-httpbin-strict.yaml");
          note(
            "row 4 apply",
            await expectOutcomes(env, { legacyFoo: "reset", legacyBar: "200", sleepFoo: "200" }),
          );
          await setPolicies(env);
          note("row 4 delete", await expectOutcomes(env, { legacyFoo: "200" }));
        },
      );

      await t.step(
        "5. workload DISABLE over namespace STRICT: the unproxied client reaches it again, the proxied one in plain text",
        async () => {
          await setPolicies(env, "pa-foo.yaml");
          await expectOutcomes(env, { legacyFoo: "reset", legacyFooUnbound: "reset", sleepFoo: "200" });
          const before = await upstreamCx(env);
          await setPolicies(env, "pa-foo.yaml", "pa-httpbin-disable.yaml");
          note(
            "row 5 apply",
            await expectOutcomes(env, { legacyFoo: "200", legacyFooUnbound: "200", sleepFoo: "200" }),
          );
          // Automatic mTLS (Istio's EDS mtlsChecker): sleep.foo's sidecar now dials httpbin.foo in plain
          // text, on a new connection (a kept-alive mTLS one from the rows before must not hide a failure).
          await expectNewPlainUpstream(env, before);
          await expectClientCertificate(env, false);
        },
      );

      await t.step(
        "6. STRICT + portLevelMtls DISABLE: plain text on the bound port only; ignored on an unbound port",
        async () => {
          // From mutual TLS (workload STRICT), so that row 5's plain text cannot pass for the port's.
          await setPolicies(env, "pa-httpbin-strict.yaml");
          await expectOutcomes(env, { legacyFoo: "reset", sleepFoo: "200" });
          await expectClientCertificate(env, true);
          await setPolicies(env, "pa-port-bound.yaml");
          note(
            "row 6 bound",
            await expectOutcomes(env, { legacyFoo: "200", legacyFooUnbound: "reset", sleepFoo: "200" }),
          );
          // The port-level DISABLE reaches the client's decision too (per endpoint port).
          await expectClientCertificate(env, false);
          // What httpbin's sidecar holds: per listener, the mode and the policy that decided it.
          const [cmd, ...args] = execArgv(workload(env, "foo/httpbin"), [
            "curl",
            "-s",
            "http://127.0.0.1:15000/config_dump",
          ]);
          const dump = JSON.parse((await run(cmd, args)).stdout);
          // deno-lint-ignore no-explicit-any
          const listeners = dump.configs[1].dynamic_listeners.map((l: any) => l.active_state.listener);
          const mtlsOf = (port: number) =>
            listeners.find((l: { address: { socket_address: { port_value: number } } }) =>
              l.address.socket_address.port_value === port
            )?.mtls;
          assert.equal(mtlsOf(BOUND)?.mode, "DISABLE");
          assert.equal(mtlsOf(BOUND)?.policy, "foo/httpbin");
          assert.equal(mtlsOf(UNBOUND)?.mode, "STRICT");
          await setPolicies(env, "pa-port-unbound.yaml");
          note(
            "row 6 unbound",
            await expectOutcomes(env, { legacyFoo: "reset", legacyFooUnbound: "reset", sleepFoo: "200" }),
          );
          // An unbound port's DISABLE is ignored: the bound port is STRICT again, so mutual TLS again.
          await expectClientCertificate(env, true);
        },
      );

      await t.step("7. deleting the policy restores plain-text access within 2 s", async () => {
        await setPolicies(env, "pa-foo.yaml");
        await expectOutcomes(env, { legacyFoo: "reset", legacyFooUnbound: "reset" });
        await setPolicies(env);
        const took = await expectOutcomes(env, { legacyFoo: "200", legacyFooUnbound: "200" }, 2000);
        note("row 7 delete -> 200", took);
        assert.ok(took < 2000, `restored in ${took} ms`);
      });
    } finally {
      note("total", Date.now() - started);
      figure(timings.join("\n"));
      await labDown(lab);
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
