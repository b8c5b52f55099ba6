/**
 * The scenario of the meshd failover tests (tests/e2e/meshd_failover_test.ts with --configDir,
 * tests/e2e/meshd_failover_kube_test.ts with the test Kubernetes API): two meshd replicas already
 * running in the failover network, httpbin and its sidecar, a client sidecar, both given both meshd
 * addresses; `hey` under load; the replica in use killed with SIGKILL; the checks that follow.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { BootstrapTokenIssuer } from "../../meshd/ca/mod.ts";
import { eventually } from "./e2e_support.ts";
import {
  curlIn,
  type FailoverNetwork,
  type Host,
  type NetnsProcess,
  parseHey,
  spawnIn,
} from "./meshd_failover_support.ts";

export const HOST = "httpbin.foo.svc.cluster.local:8000";
const MESHD_NAME = "meshd.mesh-system.svc";
const OUTBOUND = "http://127.0.0.1:15001";
const KILL_AFTER_MS = 5000;
const BOTH = ["foo/httpbin-1", "foo/sleep-1"];

// The tlsMode label marks httpbin proxied in the config itself, as Istio's injector labels pods (and
// meshd/webhooks does). Without it each meshd learns it from httpbin's own ADS stream, which is per
// replica: a client that reaches the survivor before httpbin's proxy does is told to speak plain text to
// a STRICT port for a moment (measured: 9 of 2,250 requests got 503; proxy/README.md).
/** httpbin's ServiceEntry and WorkloadEntry, and STRICT mutual TLS in namespace foo. */
export const config = (net: FailoverNetwork): string =>
  `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: foo}
spec:
  hosts: [httpbin.foo.svc.cluster.local]
  ports: [{name: http, number: 8000, targetPort: 8000, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec:
  address: ${net.hosts.httpbin.address}
  labels: {app: httpbin, security.istio.io/tlsMode: istio}
  serviceAccount: httpbin
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
`;

/** The change made after the kill: a DENY of one path on httpbin. */
export const DENY = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-path, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  action: DENY
  rules: [{to: [{operation: {paths: [/anything/denied]}}]}]
`;

const main = (program: string) => new URL(`../../${program}/main.ts`, import.meta.url).pathname;

/**
 * `meshd discovery` on `host`: mutual-TLS ADS and CA on <address>:15012, debug HTTP on <address>:15014,
 * ROOT_CA_DIR `dir/ca` shared by the replicas, 40 s workload certificates.
 *
 * @param source `--configDir ...` or `--kubeconfig ...`
 */
export function startMeshd(
  host: Host,
  dir: string,
  source: string[],
  env: Record<string, string> = {},
): NetnsProcess {
  return spawnIn(host.netns, [
    Deno.execPath(),
    "run",
    "-A",
    main("meshd"),
    "discovery",
    ...source,
    ...["--meshConfig", join(dir, "no-mesh-config")],
    ...["--grpcAddr", "127.0.0.1:15010", "--secureGRPCAddr", `${host.address}:15012`],
    ...["--httpsAddr", "127.0.0.1:0", "--httpAddr", `${host.address}:15014`],
    ...["--monitoringAddr", "127.0.0.1:15020", "--ctrlz_port", "0"],
  ], { ROOT_CA_DIR: join(dir, "ca"), DEFAULT_WORKLOAD_CERT_TTL: "40s", ...env });
}

function startProxy(
  net: FailoverNetwork,
  host: Host,
  dir: string,
  who: { serviceAccount: string; workloadEntry: string; args: string[] },
): NetnsProcess {
  return spawnIn(host.netns, [
    Deno.execPath(),
    "run",
    "--allow-read",
    "--allow-env",
    "--allow-net",
    "--allow-sys",
    main("proxy"),
    `--discoveryAddress=${net.hosts.meshdA.address}:15012,${net.hosts.meshdB.address}:15012`,
    `--discoveryServerName=${MESHD_NAME}`,
    "--namespace=foo",
    `--serviceAccount=${who.serviceAccount}`,
    `--workloadEntry=${who.workloadEntry}`,
    `--address=${host.address}`,
    `--tokenFile=${join(dir, `${who.workloadEntry}.token`)}`,
    `--rootCertFile=${join(dir, "root-cert.pem")}`,
    "--concurrency=1",
    "--proxyLogLevel=info",
    ...who.args,
  ]);
}

/** Waits until `check` holds, failing at once with its output when `p` exits. */
export async function ready(
  what: string,
  p: NetnsProcess,
  check: () => Promise<boolean>,
  ms: number,
): Promise<void> {
  await eventually(what, async () => {
    if (p.exited()) throw new Error(`${what}: exited:\n${p.output().slice(-3000)}`);
    return (await check()) ? undefined : "not yet";
  }, ms);
}

/** Waits for meshd's "meshd ready". */
export const meshdReady = (what: string, p: NetnsProcess): Promise<void> =>
  ready(what, p, () => Promise.resolve(p.output().includes("meshd ready")), 40_000);

/** The workloads whose proxies have an ADS stream to the meshd at `address` (its /debug/syncz). */
async function connectedTo(net: FailoverNetwork, address: string): Promise<string[]> {
  const r = await curlIn(net.hosts.sleep.netns, `http://${address}:15014/debug/syncz`);
  if (r.status !== 200) return [];
  return (JSON.parse(r.body) as { workload: string }[]).map((s) => s.workload).sort();
}

const certificates = (p: NetnsProcess) =>
  (p.output().match(/workload certificate spiffe:\/\/\S+ valid until/g) ?? []).length;

/** From a proxy's log: ms from its stream to meshd A ending to its first answer from meshd B. */
function reconnectMsOf(net: FailoverNetwork, p: NetnsProcess): number {
  const at = (re: RegExp) => Date.parse(re.exec(p.output())?.[1] ?? "");
  const ended = at(
    new RegExp(
      `^(\\S+)\\t\\S+\\tagent\\tADS: stream \\d+ to meshd ${net.hosts.meshdA.address}:15012 ended`,
      "m",
    ),
  );
  const connected = at(
    new RegExp(`^(\\S+)\\t\\S+\\tagent\\tADS: connected to ${net.hosts.meshdB.address}:15012`, "m"),
  );
  return connected - ended;
}

/** What the scenario needs from its test. */
export interface Scenario {
  net: FailoverNetwork;
  dir: string;
  /** Replica A (the first address: the proxies' choice) and replica B, both ready. */
  a: NetnsProcess;
  b: NetnsProcess;
  /** Seconds of load; the kill comes 5 s in. */
  loadSeconds: number;
  /** Applies a YAML document to the replicas' shared config. */
  apply(name: string, yaml: string): Promise<void>;
  /** Runs after the kill, beside the other checks (the Lease's takeover); returns a figure. */
  afterKill?(killedAt: number): Promise<string>;
  /** Every process started, for the test's clean-up. */
  procs: NetnsProcess[];
}

/**
 * Runs it: proxies and httpbin, load, SIGKILL of A, then the checks; asserts 0 failed requests.
 *
 * @returns the figure line
 */
export async function failoverUnderLoad(s: Scenario): Promise<string> {
  const { net, dir, a, b } = s;
  const hosts = net.hosts;
  const rootOf = async (m: { address: string }) =>
    (await curlIn(hosts.sleep.netns, `http://${m.address}:15014/debug/rootCert`)).body;
  const root = await rootOf(hosts.meshdA);
  assert.match(root, /BEGIN CERTIFICATE/);
  assert.equal(await rootOf(hosts.meshdB), root, "both replicas issue under one root");
  await Deno.writeTextFile(join(dir, "root-cert.pem"), root);
  const tokens = await BootstrapTokenIssuer.open(join(dir, "ca"), { audiences: ["mesh-ca"], create: false });
  for (const [sa, name] of [["httpbin", "httpbin-1"], ["sleep", "sleep-1"]]) {
    const { token } = await tokens.issue({ namespace: "foo", serviceAccount: sa });
    await Deno.writeTextFile(join(dir, `${name}.token`), token);
  }

  const app = spawnIn(hosts.httpbin.netns, [
    ...["/usr/bin/gunicorn", "-b", "127.0.0.1:8080", "-k", "gthread", "--threads", "8"],
    ...["--keep-alive", "30", "httpbin:app"],
  ]);
  s.procs.push(app);
  const server = startProxy(net, hosts.httpbin, dir, {
    serviceAccount: "httpbin",
    workloadEntry: "httpbin-1",
    args: ["--labels=app=httpbin", `--inbound=8000=127.0.0.1:8080`],
  });
  const client = startProxy(net, hosts.sleep, dir, {
    serviceAccount: "sleep",
    workloadEntry: "sleep-1",
    args: ["--outbound=127.0.0.1:15001"],
  });
  s.procs.push(server, client);
  const isReady = (host: { netns: string }) => async () =>
    (await curlIn(host.netns, "http://127.0.0.1:15000/ready")).status === 200;
  const httpbinUp = async () =>
    (await curlIn(hosts.httpbin.netns, "http://127.0.0.1:8080/status/200")).status === 200;
  await ready("httpbin", app, httpbinUp, 30_000);
  await ready("server proxy", server, isReady(hosts.httpbin), 40_000);
  await ready("client proxy", client, isReady(hosts.sleep), 40_000);
  await eventually("both proxies on meshd A", async () => {
    const [onA, onB] = [
      await connectedTo(net, hosts.meshdA.address),
      await connectedTo(net, hosts.meshdB.address),
    ];
    return onA.join() === BOTH.join() && onB.length === 0 ? undefined : `A: ${onA}; B: ${onB}`;
  }, 10_000);
  const before = await curlIn(hosts.sleep.netns, `${OUTBOUND}/anything/denied`, { host: HOST });
  assert.equal(before.status, 200, "httpbin answers /anything/denied before the policy");

  const hey = (args: string[]) =>
    spawnIn(hosts.sleep.netns, ["hey", "-z", `${s.loadSeconds}s`, "-host", HOST, ...args]);
  const kept = hey(["-c", "2", "-q", "20", `${OUTBOUND}/get`]);
  const fresh = hey(["-c", "1", "-q", "5", "-disable-keepalive", `${OUTBOUND}/status/200`]);
  s.procs.push(kept, fresh);
  await new Promise((r) => setTimeout(r, KILL_AFTER_MS));
  const certsAtKill = [certificates(server), certificates(client)];
  const killedAt = Date.now();
  await a.kill();
  const extra = s.afterKill?.(killedAt);
  await eventually("both proxies on meshd B", async () => {
    const onB = await connectedTo(net, hosts.meshdB.address);
    return onB.join() === BOTH.join() ? undefined : `B: ${onB}`;
  }, 20_000);
  const reconnectMs = Date.now() - killedAt;

  const changedAt = Date.now();
  await s.apply("deny.yaml", DENY);
  await eventually("the policy made after the kill", async () => {
    const r = await curlIn(hosts.sleep.netns, `${OUTBOUND}/anything/denied`, { host: HOST });
    return r.status === 403 ? undefined : `status ${r.status}`;
  }, 15_000);
  const policyMs = Date.now() - changedAt;

  await eventually("both proxies renewed at meshd B", () => {
    const now = [certificates(server), certificates(client)];
    return Promise.resolve(now.every((n, i) => n > certsAtKill[i]) ? undefined : `certificates ${now}`);
  }, 40_000);
  const issuedByB = b.output().match(/issued spiffe:\/\/cluster.local\/ns\/foo\/sa\/\S+ \(\w+\)/g) ?? [];
  const extraFigure = extra ? await extra : "";

  const done = () => Promise.resolve(kept.exited() && fresh.exited() ? undefined : "running");
  await eventually("hey to finish", done, (s.loadSeconds + 15) * 1000);
  const [k, f] = [parseHey(kept.output()), parseHey(fresh.output())];
  const failed = k.sent - (k.statuses["200"] ?? 0) + f.sent - (f.statuses["200"] ?? 0);
  const figure = `${k.sent + f.sent} requests (${k.sent} kept-alive, ${f.sent} new connections), ` +
    `${failed} failed; proxies on the other replica ${reconnectMs} ms after the SIGKILL (syncz polled; ` +
    `stream end to first answer in the proxies' logs: server ${reconnectMsOf(net, server)} ms, client ` +
    `${reconnectMsOf(net, client)} ms); a policy applied after the kill enforced in ${policyMs} ms; ` +
    `certificates issued by the survivor: ${issuedByB.length}${extraFigure}`;
  assert.deepEqual([k.errorLines, f.errorLines], [[], []], `no request failed: ${figure}`);
  assert.deepEqual(Object.keys(k.statuses), ["200"], kept.output());
  assert.deepEqual(Object.keys(f.statuses), ["200"], fresh.output());
  assert.ok(k.sent > 10 * s.loadSeconds && f.sent > 2 * s.loadSeconds, `${k.sent} and ${f.sent} requests`);
  assert.ok(issuedByB.some((l) => l.includes("/sa/sleep")), b.output().slice(-3000));
  assert.ok(issuedByB.some((l) => l.includes("/sa/httpbin")), b.output().slice(-3000));
  return figure;
}
