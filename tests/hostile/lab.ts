/**
 * The lab of the hostile corpus: httpbin (gunicorn, access log on) with a sidecar in foo and in bar, a
 * proxied client (foo/sleep), an unproxied one (legacy/sleep) and an ingress gateway routing
 * httpbin.example.com to httpbin.bar; the policies the cases attack (on foo's httpbin and on the
 * gateway, none on bar's); and the three entries through which every case is sent.
 *
 * @module
 */
import { join } from "node:path";
import { execArgv, labApply, labPaths, type LabState, labUp, run, workloadOf } from "../../deploy/lab/mod.ts";
import { isAlive } from "../../deploy/lab/host.ts";
import type { RawBatch, RawRequest, RawResult } from "./raw_client.ts";
import type { EntryName } from "./corpus.ts";
import { ISSUER, JWT_PATH, SUBJECT } from "./token_cases.ts";

/** httpbin under gunicorn with its access log on stdout (the lab's log file of the workload). */
const HTTPBIN =
  "[/usr/bin/gunicorn, -b, '$(BIND_IP):8080', -k, gthread, --threads, '8', --access-logfile, '-', httpbin:app]";

/**
 * foo/httpbin is what the sidecar entries reach; bar/httpbin, without policies of its own, is the
 * gateway's backend, so that the gateway's entry tests the gateway's own enforcement.
 */
const TOPOLOGY = `namespaces:
  - {name: foo, injection: enabled}
  - {name: bar, injection: enabled}
  - {name: legacy, injection: disabled}
  - {name: istio-system, injection: disabled}
workloads:
  - name: httpbin
    namespace: foo
    serviceAccount: httpbin
    command: ${HTTPBIN}
    containerPorts: [8080]
    services: [{name: httpbin, ports: [{name: http, port: 8000, targetPort: 8080}]}]
  - name: httpbin
    namespace: bar
    serviceAccount: httpbin
    command: ${HTTPBIN}
    containerPorts: [8080]
    services: [{name: httpbin, ports: [{name: http, port: 8000, targetPort: 8080}]}]
  - {name: sleep, namespace: foo, serviceAccount: sleep, command: [sleep, infinity]}
  - {name: sleep, namespace: legacy, command: [sleep, infinity]}
  - name: istio-ingressgateway
    namespace: istio-system
    serviceAccount: istio-ingressgateway-service-account
    labels: {app: istio-ingressgateway, istio: ingressgateway}
    gateway: true
    containerPorts: [8080]
    services: [{name: istio-ingressgateway, ports: [{name: http2, port: 80, targetPort: 8080}]}]
`;

/** The gateway's host. */
export const GATEWAY_HOST = "httpbin.example.com";

/** The marker prefix a sidecar's policy denies, and the one the gateway's policy denies. */
export const SIDECAR_MARK = "/anything/smuggled/";
export const GATEWAY_MARK = "/anything/gwsmuggled/";

/**
 * The policies the cases attack, for the workloads `selector` selects in `namespace`: a DENY on
 * /headers, on DELETE and on the marker prefix; a RequestAuthentication with an ALLOW that admits
 * the token path only for the right principal.
 */
function enforcement(namespace: string, selector: string, mark: string, jwks: string): string {
  const meta = (name: string) =>
    `metadata: {name: ${name}, namespace: ${namespace}}
spec:
  selector: {matchLabels: ${selector}}`;
  return `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
${meta("deny-hostile")}
  action: DENY
  rules:
  - to: [{operation: {paths: ["/headers"]}}]
  - to: [{operation: {methods: ["DELETE"]}}]
  - to: [{operation: {paths: ["${mark}*"]}}]
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
${meta("jwt-hostile")}
  jwtRules: [{issuer: "${ISSUER}", jwks: '${jwks}'}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
${meta("allow-hostile")}
  action: ALLOW
  rules:
  - from: [{source: {requestPrincipals: ["${ISSUER}/${SUBJECT}"]}}]
    to: [{operation: {paths: ["${JWT_PATH}"]}}]
  - to: [{operation: {notPaths: ["${JWT_PATH}"]}}]
`;
}

function policies(jwks: string): Record<string, string> {
  return {
    "sidecar.yaml": enforcement("foo", "{app: httpbin}", SIDECAR_MARK, jwks),
    "gateway-policies.yaml": enforcement("istio-system", "{istio: ingressgateway}", GATEWAY_MARK, jwks),
    "gateway.yaml": `apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: httpbin-gateway, namespace: bar}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["${GATEWAY_HOST}"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: httpbin, namespace: bar}
spec:
  hosts: ["${GATEWAY_HOST}"]
  gateways: [httpbin-gateway]
  http: [{route: [{destination: {host: httpbin.bar.svc.cluster.local, port: {number: 8000}}}]}]
`,
  };
}

/** Where an entry's connections come from and go to, and the Host and marker its cases use. */
export interface Entry {
  name: EntryName;
  /** `<namespace>/<workload>` the raw client runs in. */
  from: string;
  host: string;
  port: number;
  /** The Host header the entry routes by. */
  routeHost: string;
  /** The marker path prefix (denied by the entry's first policy-enforcing proxy). */
  mark: string;
}

/** A running lab of the corpus. */
export interface HostileLab {
  name: string;
  state: LabState;
  entries: Entry[];
  /** Both apps' access logs so far. */
  appLog(): Promise<string>;
  /** The proxies (role → alive). */
  proxiesAlive(): Promise<Record<string, boolean>>;
  /** Runs `requests` with the raw client inside workload `from`. */
  send(from: string, requests: RawRequest[]): Promise<RawResult[]>;
}

/**
 * Brings the lab up (name `hx<pid>`, subnet 10.236.0.0/24), applies the policies and waits until
 * every entry enforces them.
 *
 * @param jwks the JWKS text of the RequestAuthentication
 */
export async function startHostileLab(dir: string, jwks: string): Promise<HostileLab> {
  const name = `hx${Deno.pid}`;
  await Deno.writeTextFile(join(dir, "topology.yaml"), TOPOLOGY);
  const state = await labUp(join(dir, "topology.yaml"), { name, subnet: "10.236.0.0/24" });
  const files = [];
  for (const [file, text] of Object.entries(policies(jwks))) {
    await Deno.writeTextFile(join(dir, file), text);
    files.push(join(dir, file));
  }
  await labApply(name, files);
  const httpbin = workloadOf(state, "foo/httpbin");
  const gateway = workloadOf(state, "istio-system/istio-ingressgateway");
  const vip = state.plan!.services.find((s) => s.name === "httpbin" && s.namespace === "foo")!.vip;
  const entries: Entry[] = [
    {
      name: "inbound",
      from: "legacy/sleep",
      host: httpbin.address,
      port: 8080,
      routeHost: "httpbin.foo:8000",
      mark: SIDECAR_MARK + "in-",
    },
    {
      name: "outbound",
      from: "foo/sleep",
      host: vip,
      port: 8000,
      routeHost: "httpbin.foo:8000",
      mark: SIDECAR_MARK + "out-",
    },
    {
      name: "gateway",
      from: "legacy/sleep",
      host: gateway.address,
      port: 8080,
      routeHost: GATEWAY_HOST,
      mark: GATEWAY_MARK,
    },
  ];
  const lab: HostileLab = {
    name,
    state,
    entries,
    appLog: async () => {
      const logs = labPaths(name).logs;
      return (await Deno.readTextFile(join(logs, "foo.httpbin.log"))) +
        (await Deno.readTextFile(join(logs, "bar.httpbin.log")));
    },
    async proxiesAlive() {
      const out: Record<string, boolean> = {};
      for (const p of state.processes) {
        if (p.role.endsWith("/sidecar") || p.role.includes("gateway")) out[p.role] = await isAlive(p.pid);
      }
      return out;
    },
    send: (from, requests) => sendRaw(state, from, requests),
  };
  await waitEnforced(lab);
  return lab;
}

const RAW_CLIENT = new URL("./raw_client.ts", import.meta.url).pathname;

async function sendRaw(state: LabState, from: string, requests: RawRequest[]): Promise<RawResult[]> {
  const batch: RawBatch = { requests, concurrency: 6, idleMs: 700, totalMs: 4000, keep: 65536 };
  const file = await Deno.makeTempFile({ prefix: "hostile-batch-", suffix: ".json" });
  try {
    await Deno.writeTextFile(file, JSON.stringify(batch));
    const [cmd, ...args] = execArgv(workloadOf(state, from), [
      Deno.execPath(),
      "run",
      "--allow-net",
      "--allow-read",
      RAW_CLIENT,
      file,
    ]);
    const r = await run(cmd, args);
    if (r.code !== 0) throw new Error(`raw client in ${from} failed (${r.code}): ${r.stderr.slice(-2000)}`);
    return JSON.parse(r.stdout) as RawResult[];
  } finally {
    await Deno.remove(file).catch(() => {});
  }
}

/** Polls (at most 20 s) until /headers is 403 and /anything 200 through every entry. */
async function waitEnforced(lab: HostileLab): Promise<void> {
  const start = Date.now();
  for (;;) {
    const got: string[] = [];
    for (const e of lab.entries) {
      for (const [path, want] of [["/headers", "403"], ["/anything", "200"]]) {
        const url = e.name === "outbound"
          ? `http://httpbin.foo:8000${path}`
          : `http://${e.host}:${e.port}${path}`;
        const [cmd, ...args] = execArgv(workloadOf(lab.state, e.from), [
          "curl",
          "-s",
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          "--max-time",
          "2",
          "-H",
          `Host: ${e.routeHost}`,
          url,
        ]);
        const status = (await run(cmd, args)).stdout;
        if (status !== want) got.push(`${e.name} ${path}: ${status} (want ${want})`);
      }
    }
    if (got.length === 0) return;
    if (Date.now() - start > 20_000) throw new Error(`policies not enforced within 20 s: ${got.join("; ")}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
