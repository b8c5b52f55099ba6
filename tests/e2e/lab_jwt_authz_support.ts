/**
 * The lab of tests/e2e/lab_jwt_authz_test.ts and how its rows are checked: the topology (httpbin in foo
 * and bar, sleep in foo and legacy, a JWKS server, the ingress gateway) on subnet 10.247.0.0/24, Istio's
 * YAML pointed at the lab's JWKS server, curl from inside a workload, and rows of request → expected
 * status and x-mesh-authz-reason polled until they all hold.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { execArgv, labApply, labDelete, type LabState, run, workloadOf } from "../../deploy/lab/mod.ts";

const FIXTURES = new URL("../fixtures/istio/", import.meta.url).pathname;
export const fixture = (path: string): string => Deno.readTextFileSync(join(FIXTURES, path));
const ISTIO_JWKS_URI =
  "https://raw.githubusercontent.com/istio/istio/release-1.26/security/tools/jwt/samples/jwks.json";
/** The lab's JWKS server, as meshd reaches it: service jwks.legacy port 80 → python's 8000. */
const LAB_JWKS_URI = "http://jwks.legacy/jwks.json";
export const ISS = "testing@secure.istio.io";
export const DEMO_JWT = fixture("../istio_jwt/demo.jwt").trim();
export const GROUPS_JWT = fixture("../istio_jwt/groups-scope.jwt").trim();
/** A token with a valid shape whose signature no key verifies. */
export const INVALID_JWT = DEMO_JWT.slice(0, -8) + "AAAAAAAA";

export const SUBNET = "10.247.0.0/24";
const HTTPBIN = (port: number) =>
  `[/usr/bin/gunicorn, -b, '$(BIND_IP):${port}', -k, gthread, --threads, '4', httpbin:app]`;
export function topology(jwksDir: string): string {
  return `namespaces:
  - {name: foo, injection: enabled}
  - {name: bar, injection: enabled}
  - {name: legacy, injection: disabled}
  - {name: istio-system, injection: disabled}
workloads:
  - name: httpbin
    namespace: foo
    serviceAccount: httpbin
    command: ${HTTPBIN(8080)}
    containerPorts: [8080]
    services: [{name: httpbin, ports: [{name: http, port: 8000, targetPort: 8080}]}]
  - {name: sleep, namespace: foo, serviceAccount: sleep, command: [sleep, infinity]}
  - name: httpbin
    namespace: bar
    serviceAccount: httpbin
    command: ${HTTPBIN(8080)}
    containerPorts: [8080]
    services: [{name: httpbin, ports: [{name: http, port: 8000, targetPort: 8080}]}]
  - {name: sleep, namespace: legacy, command: [sleep, infinity]}
  - name: jwks
    namespace: legacy
    command: [/usr/bin/python3, -m, http.server, --bind, '$(BIND_IP)', --directory, '${jwksDir}', '8000']
    containerPorts: [8000]
    services: [{name: jwks, ports: [{name: http, port: 80, targetPort: 8000}]}]
  - name: istio-ingressgateway
    namespace: istio-system
    serviceAccount: istio-ingressgateway-service-account
    labels: {app: istio-ingressgateway, istio: ingressgateway}
    gateway: true
    containerPorts: [8080]
    services: [{name: istio-ingressgateway, ports: [{name: http2, port: 80, targetPort: 8080}]}]
meshConfig:
  denialExplanation:
    principals: [cluster.local/ns/foo/sa/sleep]
    ipBlocks: [${SUBNET}]
`;
}

/** Istio's YAML with jwksUri pointed at the lab's JWKS server. */
export function withLabJwks(text: string): string {
  assert.ok(text.includes(ISTIO_JWKS_URI), "the fixture names Istio's jwksUri");
  return text.replaceAll(ISTIO_JWKS_URI, LAB_JWKS_URI);
}

/** `kubectl apply -n <namespace>` for a file whose documents name no namespace. */
export function inNamespace(text: string, namespace: string): string {
  return text.replace(/^metadata:\n/gm, `metadata:\n  namespace: ${namespace}\n`);
}

/** A second service behind the gateway: host foo.example.com → httpbin.foo (the '*' host goes to bar). */
export const VS_FOO = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: httpbin-foo, namespace: foo}
spec:
  hosts: [foo.example.com]
  gateways: [bar/httpbin-gateway]
  http:
  - route:
    - destination: {host: httpbin.foo.svc.cluster.local, port: {number: 8000}}
`;

// The seed's rows, written for httpbin.foo.
export const SEED_RA = `apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt-seed, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  jwtRules: [{issuer: ${ISS}, jwksUri: "${LAB_JWKS_URI}"}]
`;
export const seedDeny = (to: string): string =>
  `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: require-token, namespace: foo}
spec:
  selector: {matchLabels: {app: httpbin}}
  action: DENY
  rules: [{from: [{source: {notRequestPrincipals: ["*"]}}]${to}}]
`;

export interface Reply {
  status: string;
  headers: Record<string, string>;
  body: string;
}

export interface Env {
  lab: string;
  dir: string;
  state: LabState;
  /** Target file name in meshd's config directory → applied. */
  applied: Set<string>;
}

export interface Call {
  token?: string;
  method?: string;
  headers?: Record<string, string>;
}

/** curl from inside workload `from` (`<ns>/<name>`), with `x-mesh-authz-debug: 1`. */
export async function request(env: Env, from: string, url: string, call: Call = {}): Promise<Reply> {
  const args = [
    "curl",
    "-s",
    "-i",
    "--max-time",
    "3",
    "-X",
    call.method ?? "GET",
    "-H",
    "x-mesh-authz-debug: 1",
  ];
  if (call.token !== undefined) args.push("-H", `Authorization: Bearer ${call.token}`);
  for (const [k, v] of Object.entries(call.headers ?? {})) args.push("-H", `${k}: ${v}`);
  const [cmd, ...rest] = execArgv(workloadOf(env.state, from), [...args, url]);
  const r = await run(cmd, rest);
  if (r.code !== 0) return { status: `000 (exit ${r.code})`, headers: {}, body: r.stderr };
  const end = r.stdout.indexOf("\r\n\r\n");
  const [statusLine, ...lines] = r.stdout.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: statusLine.split(" ")[1], headers, body: r.stdout.slice(end + 4) };
}

/**
 * A request and the status it must get; `reason` is the x-mesh-authz-reason a 403 must carry, `body`
 * what the body must match (e.g. the backend's identity in httpbin's echo of XFCC).
 */
export interface Row {
  from: string;
  url: string;
  call?: Call;
  status: string;
  reason?: string;
  body?: RegExp;
}

function describe(row: Row): string {
  const token = row.call?.token === undefined ? "no token" : `token …${row.call.token.slice(-6)}`;
  return `${row.from} ${row.call?.method ?? "GET"} ${row.url} (${token}${
    row.call?.headers ? ` ${JSON.stringify(row.call.headers)}` : ""
  })`;
}

/** Checks one row; returns what is wrong, or undefined. */
async function check(env: Env, row: Row): Promise<string | undefined> {
  const r = await request(env, row.from, row.url, row.call);
  if (r.status !== row.status) {
    return `${describe(row)}: ${r.status}, want ${row.status}: ${r.body.slice(0, 120)}`;
  }
  if (row.status === "403" && r.body !== "RBAC: access denied") return `${describe(row)}: 403 body ${r.body}`;
  if (
    row.status === "401" && !/^Bearer realm=".*", error="invalid_token"$/.test(r.headers["www-authenticate"])
  ) {
    return `${describe(row)}: 401 without WWW-Authenticate: ${JSON.stringify(r.headers)}`;
  }
  if (row.body !== undefined && !row.body.test(r.body)) {
    return `${describe(row)}: body ${r.body.slice(0, 300)}`;
  }
  if (row.reason !== undefined && r.headers["x-mesh-authz-reason"] !== row.reason) {
    return `${describe(row)}: x-mesh-authz-reason ${r.headers["x-mesh-authz-reason"]}, want ${row.reason}`;
  }
  return undefined;
}

/**
 * Polls (every 100 ms, at most `timeoutMs`) until every row holds at once: a policy change takes
 * effect after meshd's push (and, for a new jwksUri, its fetch). Returns the ms it took.
 */
export async function expectRows(env: Env, rows: Row[], timeoutMs = 8000): Promise<number> {
  const start = Date.now();
  for (;;) {
    const problems = (await Promise.all(rows.map((r) => check(env, r)))).filter((p) => p !== undefined);
    if (problems.length === 0) return Date.now() - start;
    if (Date.now() - start > timeoutMs) {
      throw new Error(`not within ${timeoutMs} ms:\n  ${problems.join("\n  ")}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `lab apply` of `text` as config file `target` (same target: replaced, as `kubectl apply` would). */
export async function apply(env: Env, target: string, text: string): Promise<void> {
  await Deno.writeTextFile(join(env.dir, target), text);
  await labApply(env.lab, [join(env.dir, target)]);
  env.applied.add(target);
}

/** `lab delete` of config files applied before. */
export async function remove(env: Env, ...targets: string[]): Promise<void> {
  await labDelete(env.lab, targets);
  for (const t of targets) env.applied.delete(t);
}

export const GATEWAY_URL = "http://istio-ingressgateway.istio-system";
export const viaGateway = (path: string, status: string, call: Call = {}, reason?: string): Row => ({
  from: "legacy/sleep",
  url: `${GATEWAY_URL}${path}`,
  call,
  status,
  reason,
});
export const toFoo = (path: string, status: string, call: Call = {}, reason?: string): Row => ({
  from: "foo/sleep",
  url: `http://httpbin.foo:8000${path}`,
  call,
  status,
  reason,
});
