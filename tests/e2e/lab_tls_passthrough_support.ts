/**
 * The lab of tests/e2e/lab_tls_passthrough_test.ts: certificates made with openssl as Istio's
 * "Ingress Gateway without TLS Termination" task makes them, the topology (an `openssl s_server` TLS
 * application behind its service `my-nginx`, clients with and without a sidecar, a TLS server standing
 * in for an external host, the ingress gateway) on subnet 10.225.0.0/24, and the clients' commands
 * (openssl s_client, curl) run inside the workloads' network namespaces with a time limit.
 */
import { X509Certificate } from "node:crypto";
import { join } from "node:path";
import {
  execArgv,
  labApply,
  labDown,
  type LabState,
  labUp,
  run,
  type RunResult,
  workloadOf,
} from "../../deploy/lab/mod.ts";
import { figure } from "../../shared/internal/testing/figures.ts";
import { runMeshctl } from "./e2e_support.ts";

export const SUBNET = "10.225.0.0/24";
/** Where the TLS application runs, with its sidecar (which carries its `https` port as opaque bytes). */
export const APP_NS = "foo";
/** The external host's name, which only a ServiceEntry makes known to the mesh. */
export const EXTERNAL_HOST = "api.external.test";
/** A domain of external hosts that a wildcard ServiceEntry (`*.wild.test`, resolution NONE) declares. */
export const WILDCARD_DOMAIN = "wild.test";
/** The ServiceEntry of {@link EXTERNAL_HOST}: TLS on 443, resolution DNS. */
export const EXTERNAL_SERVICE_ENTRY = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: external-api, namespace: foo}
spec:
  hosts: [${EXTERNAL_HOST}]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: DNS
  location: MESH_EXTERNAL
`;
/** The ServiceEntry of `*.{@link WILDCARD_DOMAIN}`: HTTPS on 443, resolution NONE. */
export const WILDCARD_SERVICE_ENTRY = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: wild, namespace: foo}
spec:
  hosts: ["*.${WILDCARD_DOMAIN}"]
  ports: [{number: 443, name: https, protocol: HTTPS}]
  resolution: NONE
  location: MESH_EXTERNAL
`;

/** Runs openssl; throws with its output when it fails. */
async function openssl(dir: string, args: string[]): Promise<void> {
  const r = await run("openssl", args.map((a) => a.replaceAll("$DIR", dir)));
  if (r.code !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`);
}

/** The certificates of the task (example.com CA, nginx.example.com) and of the external host. */
export interface Certs {
  dir: string;
  /** SHA-256 fingerprint of nginx.example.com's certificate, as openssl prints it (AB:CD:...). */
  nginxFingerprint: string;
}

/**
 * The task's openssl commands, with `-extfile` adding the service's names as SANs (so that a client
 * of the mesh service verifies the same certificate), and an external CA and host certificate.
 */
export async function makeCerts(dir: string): Promise<Certs> {
  const san = join(dir, "san.ext");
  await Deno.writeTextFile(
    san,
    `subjectAltName=DNS:nginx.example.com,DNS:my-nginx.${APP_NS},DNS:my-nginx.${APP_NS}.svc.cluster.local\n`,
  );
  const extSan = join(dir, "ext.ext");
  await Deno.writeTextFile(extSan, `subjectAltName=DNS:${EXTERNAL_HOST},DNS:*.${WILDCARD_DOMAIN}\n`);
  for (
    const args of [
      `req -x509 -sha256 -nodes -days 365 -newkey rsa:2048 -subj /O=example\\ Inc./CN=example.com -keyout $DIR/example.com.key -out $DIR/example.com.crt`,
      `req -out $DIR/nginx.example.com.csr -newkey rsa:2048 -nodes -keyout $DIR/nginx.example.com.key -subj /CN=nginx.example.com/O=some\\ organization`,
      `x509 -req -sha256 -days 365 -CA $DIR/example.com.crt -CAkey $DIR/example.com.key -set_serial 0 -in $DIR/nginx.example.com.csr -out $DIR/nginx.example.com.crt -extfile ${san}`,
      `req -x509 -sha256 -nodes -days 365 -newkey rsa:2048 -subj /CN=External\\ Root -keyout $DIR/external-ca.key -out $DIR/external-ca.crt`,
      `req -out $DIR/external.csr -newkey rsa:2048 -nodes -keyout $DIR/external.key -subj /CN=${EXTERNAL_HOST}`,
      `x509 -req -sha256 -days 365 -CA $DIR/external-ca.crt -CAkey $DIR/external-ca.key -set_serial 1 -in $DIR/external.csr -out $DIR/external.crt -extfile ${extSan}`,
    ]
  ) {
    await openssl(dir, args.split(/(?<!\\) /).map((a) => a.replaceAll("\\ ", " ")));
  }
  const cert = new X509Certificate(await Deno.readTextFile(join(dir, "nginx.example.com.crt")));
  return { dir, nginxFingerprint: cert.fingerprint256 };
}

/** `openssl s_server -www` on port 443: a TLS application answering each GET with a status page. */
function sServer(certs: Certs, name: string): string {
  return `[openssl, s_server, -accept, '$(BIND_IP):443', -cert, ${join(certs.dir, `${name}.crt`)}, -key, ${
    join(certs.dir, `${name}.key`)
  }, -www, -quiet]`;
}

/**
 * The topology: the app (in {@link APP_NS}), clients with and without a sidecar, the external host, the
 * gateway; REGISTRY_ONLY, so that a sidecar reaches the external host only through its ServiceEntry.
 */
export function topology(certs: Certs): string {
  return `namespaces:
  - {name: foo, injection: enabled}
  - {name: legacy, injection: disabled}
  - {name: ext, injection: disabled}
  - {name: istio-system, injection: disabled}
workloads:
  - name: my-nginx
    namespace: ${APP_NS}
    serviceAccount: my-nginx
    command: ${sServer(certs, "nginx.example.com")}
    containerPorts: [443]
    services: [{name: my-nginx, ports: [{name: https, port: 443}]}]
  - {name: sleep, namespace: foo, serviceAccount: sleep, command: [sleep, infinity]}
  - {name: sleep, namespace: legacy, command: [sleep, infinity]}
  - name: api
    namespace: ext
    command: ${sServer(certs, "external")}
    containerPorts: [443]
  - name: istio-ingressgateway
    namespace: istio-system
    serviceAccount: istio-ingressgateway-service-account
    labels: {app: istio-ingressgateway, istio: ingressgateway}
    gateway: true
    containerPorts: [8443]
    services: [{name: istio-ingressgateway, ports: [{name: https, port: 443, targetPort: 8443}]}]
meshConfig:
  outboundTrafficPolicy: {mode: REGISTRY_ONLY}
`;
}

/** Runs `argv` inside workload `from` (`<ns>/<name>`), killed after 10 s. */
export function inWorkload(state: LabState, from: string, argv: string[]): Promise<RunResult> {
  const [cmd, ...rest] = execArgv(workloadOf(state, from), ["timeout", "10", ...argv]);
  return run(cmd, rest);
}

/** What `openssl s_client` saw: the peer certificate's subject and SHA-256 fingerprint, and the verify result. */
export interface Handshake {
  code: number;
  subject?: string;
  fingerprint?: string;
  verified: boolean;
  output: string;
}

/** `openssl s_client -connect <connect> -servername <sni>`, verifying with `caFile`, from workload `from`. */
export async function sClient(
  state: LabState,
  from: string,
  connect: string,
  sni: string,
  caFile: string,
): Promise<Handshake> {
  const r = await inWorkload(state, from, [
    "openssl",
    "s_client",
    "-connect",
    connect,
    "-servername",
    sni,
    "-CAfile",
    caFile,
    "-showcerts",
  ]);
  const output = r.stdout + r.stderr;
  const pem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(r.stdout)?.[0];
  return {
    code: r.code,
    subject: /^subject=(.*)$/m.exec(r.stdout)?.[1]?.trim(),
    fingerprint: pem === undefined ? undefined : new X509Certificate(pem).fingerprint256,
    verified: /Verify return code: 0 \(ok\)/.test(r.stdout),
    output,
  };
}

/** Writes `text` as `<file>` in `dir` and applies it to the lab (validated as meshctl validate). */
export async function apply(lab: string, dir: string, file: string, text: string): Promise<void> {
  await Deno.writeTextFile(join(dir, file), text);
  await labApply(lab, [join(dir, file)]);
}

/** Polls `check` (every 200 ms, at most `timeoutMs`) until it returns undefined; throws its last complaint. */
export async function eventually(
  what: string,
  check: () => Promise<string | undefined>,
  timeoutMs = 10_000,
): Promise<number> {
  const started = Date.now();
  let last: string | undefined;
  while (Date.now() - started < timeoutMs) {
    last = await check();
    if (last === undefined) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms: ${last}`);
}

/** What a test gets from {@link withTlsLab}. */
export interface TlsLab {
  lab: string;
  dir: string;
  certs: Certs;
  state: LabState;
  /** Lines printed as figures when the lab goes down. */
  timings: string[];
  /** Makes {@link EXTERNAL_HOST} resolve to the `ext/api` workload in workload `from`'s namespace (the proxy resolves it there too). */
  resolveExternal(from: string): Promise<void>;
}

/**
 * Brings up lab `lab` of {@link topology} on `subnet` (certificates in a temporary folder), runs `fn`,
 * then prints the timings as figures (prefixed with `label`) and takes the lab down.
 */
export async function withTlsLab(
  lab: string,
  subnet: string,
  label: string,
  fn: (l: TlsLab) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: `${label}-` });
  const certs = await makeCerts(dir);
  await Deno.writeTextFile(join(dir, "topology.yaml"), topology(certs));
  const timings: string[] = [];
  try {
    const started = Date.now();
    const state = await labUp(join(dir, "topology.yaml"), { name: lab, subnet });
    timings.push(`lab up: ${Date.now() - started} ms`);
    const resolveExternal = async (from: string) => {
      const external = workloadOf(state, "ext/api").address;
      await Deno.writeTextFile(
        `/etc/netns/${workloadOf(state, from).netns}/hosts`,
        `${external}\t${EXTERNAL_HOST}\n`,
        { append: true },
      );
    };
    await fn({ lab, dir, certs, state, timings, resolveExternal });
  } finally {
    figure(timings.map((l) => `${label}: ${l}`).join("\n"));
    await labDown(lab);
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * `meshctl proxy-config listener -f <dump> [...extra]` on workload `from`'s config dump (its admin
 * port, fetched inside its namespace and saved in `dir`): the proxy's own view of its listeners.
 */
export async function listenersOf(
  state: LabState,
  dir: string,
  from: string,
  extra: string[] = [],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const dump = await inWorkload(state, from, ["curl", "-sS", "http://127.0.0.1:15000/config_dump"]);
  const file = join(dir, `${from.replace("/", "_")}-dump.json`);
  await Deno.writeTextFile(file, dump.stdout);
  return await runMeshctl(["proxy-config", "listener", "-f", file, ...extra]);
}
