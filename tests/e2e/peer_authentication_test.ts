/**
 * The policies seed's PeerAuthentication rows ("Observable effects") end to end: one in-process meshd
 * with its CA on 127.0.0.1, httpbin (gunicorn) behind the proxy of workload httpbin.foo on 127.0.0.2,
 * the proxy of workload sleep.foo on 127.0.0.3 (outbound only, used as curl's http proxy), and a legacy
 * unproxied client (plain curl). Policies are files in meshd's --configDir, changed between rows.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startCa, startMeshd } from "../../proxy/agent/test_support.ts";
import { type ProxyProc, startProxyProcess } from "./proxy_process.ts";
import { curl, type CurlResult, freePort, hasHttpbin, Httpbin } from "../../proxy/inbound/test_support.ts";

const MESHD_IP = "127.0.0.1";
const HTTPBIN_IP = "127.0.0.2";
const SLEEP_IP = "127.0.0.3";
/** The container port bound to the service httpbin.foo:8000. */
const BOUND = 8000;
/** A second inbound port of httpbin's proxy, to the same app, that no service targets. */
const UNBOUND = 9000;

const SERVICES = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: [httpbin.foo.svc.cluster.local]
  ports: [{name: http, number: ${BOUND}, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: ${HTTPBIN_IP}, labels: {app: httpbin}, serviceAccount: httpbin}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: sleep-1, namespace: foo}
spec: {address: ${SLEEP_IP}, labels: {app: sleep}, serviceAccount: sleep}
`;

function pa(namespace: string, name: string, spec: string): string {
  return `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: ${name}, namespace: ${namespace}}
spec: ${spec}
`;
}

const MESH_STRICT = pa("mesh-system", "default", "{mtls: {mode: STRICT}}");
const FOO_STRICT = pa("foo", "default", "{mtls: {mode: STRICT}}");
const BAR_STRICT = pa("bar", "default", "{mtls: {mode: STRICT}}");
const HTTPBIN_STRICT = pa(
  "foo",
  "httpbin",
  "{selector: {matchLabels: {app: httpbin}}, mtls: {mode: STRICT}}",
);
const OTHER_STRICT = pa("foo", "other", "{selector: {matchLabels: {app: other}}, mtls: {mode: STRICT}}");
const HTTPBIN_DISABLE = pa(
  "foo",
  "httpbin",
  "{selector: {matchLabels: {app: httpbin}}, mtls: {mode: DISABLE}}",
);
const portLevel = (port: number) =>
  pa(
    "foo",
    "httpbin",
    `{selector: {matchLabels: {app: httpbin}}, mtls: {mode: STRICT}, portLevelMtls: {${port}: {mode: DISABLE}}}`,
  );

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The outcome of one request, reduced to what the rows compare: "200", "reset" or something else. */
type Outcome = string;

function outcome(r: CurlResult): Outcome {
  if (r.code === 56 && r.stdout.startsWith("000")) return "reset";
  if (r.code === 0) return r.stdout.slice(0, 3);
  return `exit ${r.code} (${r.stdout.slice(0, 3)}) ${r.stderr.trim()}`;
}

/** A legacy (unproxied) client: plain curl straight to httpbin's proxy port. */
async function legacy(port: number): Promise<Outcome> {
  return outcome(
    await curl([
      "--max-time",
      "2",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      `http://${HTTPBIN_IP}:${port}/ip`,
    ]),
  );
}

interface Env {
  dir: string;
  sleepOutbound: number;
  procs: ProxyProc[];
}

/** sleep.foo: curl through its proxy's outbound listener to httpbin.foo:8000/headers. */
async function fromSleep(env: Env): Promise<{ outcome: Outcome; xfcc?: string }> {
  const r = await curl([
    "--max-time",
    "2",
    "-x",
    `http://${SLEEP_IP}:${env.sleepOutbound}`,
    "-w",
    "\n%{http_code}",
    `http://httpbin.foo:${BOUND}/headers`,
  ]);
  if (r.code !== 0) return { outcome: outcome(r) };
  const nl = r.stdout.lastIndexOf("\n");
  const status = r.stdout.slice(nl + 1);
  if (status !== "200") return { outcome: status };
  const headers = JSON.parse(r.stdout.slice(0, nl)).headers as Record<string, string | string[]>;
  const x = headers["X-Forwarded-Client-Cert"];
  return { outcome: "200", xfcc: Array.isArray(x) ? x[0] : x };
}

const POLICY_FILES = new Set<string>();

/** Makes `files` (name → YAML) the only policy files in meshd's config directory. */
async function setPolicies(env: Env, files: Record<string, string>): Promise<void> {
  for (const name of POLICY_FILES) {
    if (!(name in files)) {
      await Deno.remove(join(env.dir, "config", name));
      POLICY_FILES.delete(name);
    }
  }
  for (const [name, yaml] of Object.entries(files)) {
    await Deno.writeTextFile(join(env.dir, "config", name), yaml);
    POLICY_FILES.add(name);
  }
}

/**
 * Polls (every 50 ms, at most `timeoutMs`) until the legacy client's outcome on each given port and
 * sleep's outcome are the expected ones; returns the milliseconds it took.
 */
async function expectOutcomes(
  env: Env,
  want: { legacy?: Record<number, Outcome>; sleep?: Outcome },
  timeoutMs = 3000,
): Promise<number> {
  const start = Date.now();
  let last = "";
  for (;;) {
    const got: { legacy: Record<number, Outcome>; sleep?: Outcome } = { legacy: {} };
    for (const port of Object.keys(want.legacy ?? {}).map(Number)) got.legacy[port] = await legacy(port);
    if (want.sleep !== undefined) got.sleep = (await fromSleep(env)).outcome;
    const ok = Object.entries(want.legacy ?? {}).every(([p, o]) => got.legacy[Number(p)] === o) &&
      (want.sleep === undefined || got.sleep === want.sleep);
    if (ok) return Date.now() - start;
    last = JSON.stringify(got);
    if (Date.now() - start > timeoutMs) {
      throw new Error(`not ${JSON.stringify(want)} within ${timeoutMs} ms; last ${last}`);
    }
    await sleep(50);
  }
}

/** Asserts the legacy client keeps getting 200 for `ms` (a policy that must have no effect). */
async function expectUnaffected(ms = 1000): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    assert.equal(await legacy(BOUND), "200", `legacy client affected after ${Date.now() - start} ms`);
    await sleep(100);
  }
}

const timings: string[] = [];
const note = (row: string, ms: number) => timings.push(`${row}: ${ms} ms`);

Deno.test({
  name: "e2e: PeerAuthentication rows of the policies seed (meshd, two proxies, httpbin, legacy curl)",
  ignore: !hasHttpbin(),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "pa-e2e-" });
    await Deno.mkdir(join(dir, "config"));
    await Deno.writeTextFile(join(dir, "config", "services.yaml"), SERVICES);
    const ca = await startCa(join(dir, "ca"));
    const meshd = await startMeshd(join(dir, "config"), { ca });
    await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
    const app = await Httpbin.start();
    const sleepOutbound = freePort();
    const env: Env = { dir, sleepOutbound, procs: [] };
    const started = Date.now();
    try {
      const procs = await Promise.allSettled([
        startProxyProcess(meshd, {
          dir,
          ca,
          meshdIp: MESHD_IP,
          sa: "httpbin",
          we: "httpbin-1",
          ip: HTTPBIN_IP,
          labels: "app=httpbin",
          args: [`--inbound=${BOUND}=127.0.0.1:${app.port}`, `--inbound=${UNBOUND}=127.0.0.1:${app.port}`],
        }),
        startProxyProcess(meshd, {
          dir,
          ca,
          meshdIp: MESHD_IP,
          sa: "sleep",
          we: "sleep-1",
          ip: SLEEP_IP,
          labels: "app=sleep",
          args: [`--outbound=${SLEEP_IP}:${sleepOutbound}`],
        }),
      ]);
      for (const p of procs) if (p.status === "fulfilled") env.procs.push(p.value);
      for (const p of procs) if (p.status === "rejected") throw p.reason;
      note("start (meshd, httpbin, both proxies ready)", Date.now() - started);

      await t.step(
        "1. no policy: legacy 200; sleep 200 over automatic mTLS (XFCC with sleep's URI)",
        async () => {
          note(
            "row 1",
            await expectOutcomes(env, { legacy: { [BOUND]: "200", [UNBOUND]: "200" }, sleep: "200" }),
          );
          const r = await fromSleep(env);
          assert.equal(r.outcome, "200");
          assert.ok(r.xfcc, "X-Forwarded-Client-Cert present");
          assert.match(r.xfcc, /(^|;)URI=spiffe:\/\/cluster\.local\/ns\/foo\/sa\/sleep(;|$)/);
          assert.match(r.xfcc, /(^|;)By=spiffe:\/\/cluster\.local\/ns\/foo\/sa\/httpbin(;|$)/);
          assert.match(r.xfcc, /(^|;)Hash=[0-9a-f]{64}(;|$)/);
          // The legacy client's request is plain text: no XFCC reaches the app.
          const plain = await curl([`http://${HTTPBIN_IP}:${BOUND}/headers`]);
          assert.equal(plain.code, 0, plain.stderr);
          assert.equal(JSON.parse(plain.stdout).headers["X-Forwarded-Client-Cert"], undefined);
        },
      );

      await t.step(
        "2. mesh-wide STRICT (mesh-system, no selector): legacy 000/exit 56; sleep 200",
        async () => {
          await setPolicies(env, { "pa-mesh.yaml": MESH_STRICT });
          note("row 2 apply", await expectOutcomes(env, { legacy: { [BOUND]: "reset" }, sleep: "200" }));
          const r = await curl(["-o", "/dev/null", "-w", "%{http_code}", `http://${HTTPBIN_IP}:${BOUND}/ip`]);
          assert.equal(r.code, 56);
          assert.equal(r.stdout, "000");
          await setPolicies(env, {});
          note("row 2 delete", await expectOutcomes(env, { legacy: { [BOUND]: "200" } }));
        },
      );

      await t.step(
        "3. namespace STRICT in foo: legacy reset, sleep 200; STRICT in bar: no effect",
        async () => {
          await setPolicies(env, { "pa-bar.yaml": BAR_STRICT });
          await expectUnaffected();
          await setPolicies(env, { "pa-bar.yaml": BAR_STRICT, "pa-foo.yaml": FOO_STRICT });
          note("row 3 apply", await expectOutcomes(env, { legacy: { [BOUND]: "reset" }, sleep: "200" }));
          await setPolicies(env, {});
          note("row 3 delete", await expectOutcomes(env, { legacy: { [BOUND]: "200" } }));
        },
      );

      await t.step(
        "4. workload STRICT app=httpbin: legacy reset, sleep 200; app=other: no effect",
        async () => {
          await setPolicies(env, { "pa-other.yaml": OTHER_STRICT });
          await expectUnaffected();
          await setPolicies(env, { "pa-other.yaml": OTHER_STRICT, "pa-httpbin.yaml": HTTPBIN_STRICT });
          note("row 4 apply", await expectOutcomes(env, { legacy: { [BOUND]: "reset" }, sleep: "200" }));
          await setPolicies(env, {});
          note("row 4 delete", await expectOutcomes(env, { legacy: { [BOUND]: "200" } }));
        },
      );

      await t.step("5. workload DISABLE over namespace STRICT: legacy 200 again", async () => {
        await setPolicies(env, { "pa-foo.yaml": FOO_STRICT });
        await expectOutcomes(env, { legacy: { [BOUND]: "reset", [UNBOUND]: "reset" } });
        await setPolicies(env, { "pa-foo.yaml": FOO_STRICT, "pa-httpbin.yaml": HTTPBIN_DISABLE });
        note(
          "row 5 apply",
          await expectOutcomes(env, { legacy: { [BOUND]: "200", [UNBOUND]: "200" }, sleep: "200" }),
        );
      });

      await t.step(
        "6. STRICT + portLevelMtls DISABLE: bound port plain text; unbound port ignored",
        async () => {
          // From row 5's state (everything plain text): the bound port stays open, the other closes.
          await setPolicies(env, { "pa-httpbin.yaml": portLevel(BOUND) });
          note(
            "row 6 bound",
            await expectOutcomes(env, { legacy: { [BOUND]: "200", [UNBOUND]: "reset" }, sleep: "200" }),
          );
          // What httpbin's proxy holds: per listener, the mode and the policy that decided it.
          const dump = await (await fetch(`http://127.0.0.1:${env.procs[0].adminPort}/config_dump`)).json();
          // deno-lint-ignore no-explicit-any
          const listeners = dump.configs[1].dynamic_listeners.map((l: any) => l.active_state.listener);
          const mtlsOf = (port: number) =>
            listeners.find((l: { address: { socket_address: { port_value: number } } }) =>
              l.address.socket_address.port_value === port
            )?.mtls;
          assert.equal(mtlsOf(BOUND)?.mode, "DISABLE");
          assert.equal(mtlsOf(BOUND)?.policy, "foo/httpbin");
          assert.equal(mtlsOf(UNBOUND)?.mode, "STRICT");
          // portLevelMtls on a port no service targets is ignored: the workload's STRICT holds there too.
          await setPolicies(env, { "pa-httpbin.yaml": portLevel(UNBOUND) });
          note(
            "row 6 unbound",
            await expectOutcomes(env, { legacy: { [BOUND]: "reset", [UNBOUND]: "reset" }, sleep: "200" }),
          );
        },
      );

      await t.step("7. deleting the policy restores plain-text access within 2 s", async () => {
        await setPolicies(env, { "pa-foo.yaml": FOO_STRICT });
        await expectOutcomes(env, { legacy: { [BOUND]: "reset", [UNBOUND]: "reset" } });
        await setPolicies(env, {});
        const took = await expectOutcomes(env, { legacy: { [BOUND]: "200", [UNBOUND]: "200" } }, 2000);
        note("row 7 delete → 200", took);
        assert.ok(took < 2000, `restored in ${took} ms`);
      });
    } finally {
      note("total", Date.now() - started);
      console.log(timings.join("\n"));
      for (const p of env.procs) await p.stop();
      await app.stop();
      await meshd.stop();
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
