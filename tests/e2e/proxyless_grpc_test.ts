/**
 * Proxyless gRPC through meshd (issue 16, item 6): a grpc-js-xds server and a grpc-js-xds client
 * (real processes: proxyless_grpc_app.ts) read their config from the ADS of a real `meshd discovery
 * --configDir` process (Envoy's types, meshd/xds/grpcgen)
 * and their certificates from `proxy --proxyless` (real processes, certificates from meshd's CA). The
 * server's namespace is STRICT: the call goes over mutual TLS that gRPC sets up from the xDS
 * config. A DENY AuthorizationPolicy for the client's principal makes the call PERMISSION_DENIED, an
 * ALLOW for it lets the call through, an ALLOW for another principal denies it, and a client with a
 * certificate from another CA, or with none, fails the handshake (the same client with the agent's
 * certificate passes it and is denied by the policy). Then DISABLE serves plain text, and PERMISSIVE
 * (the server's workload carries the tlsMode label) requires mutual TLS again, as istiod's
 * pilot/pkg/networking/grpcgen/lds.go: a plain-text client fails, the xDS client still gets through.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { BootstrapTokenIssuer } from "../../meshd/ca/mod.ts";
import { makeCsr, startCa } from "../../meshd/ca/test_support.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { startMeshdProcess } from "./e2e_support.ts";

const APP = new URL("./proxyless_grpc_app.ts", import.meta.url).pathname;
const PROXY = new URL("../../proxy/main.ts", import.meta.url).pathname;

function config(port: number): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo, namespace: echo}
spec:
  hosts: [echo.echo.svc]
  ports: [{number: ${port}, name: grpc, protocol: GRPC}]
  resolution: STATIC
  workloadSelector: {labels: {app: echo}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: echo-1, namespace: echo}
spec: {address: 127.0.0.1, labels: {app: echo, security.mesh.io/tlsMode: mesh}, serviceAccount: echo-server}
`;
}

function peerAuthentication(mode: "STRICT" | "PERMISSIVE" | "DISABLE"): string {
  return `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: mode, namespace: echo}
spec: {mtls: {mode: ${mode}}}
`;
}

function policy(action: "ALLOW" | "DENY", principal: string): string {
  return `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: echo-policy, namespace: echo}
spec:
  action: ${action}
  selector: {matchLabels: {app: echo}}
  rules: [{from: [{source: {principals: ["${principal}"]}}], to: [{operation: {paths: ["/echo.Echo/*"]}}]}]
`;
}

/** The environment of a gRPC process: none of the host's GRPC_* variables (platform.md's trap). */
function grpcEnv(extra: Record<string, string>): Record<string, string> {
  const env = Object.fromEntries(Object.entries(Deno.env.toObject()).filter(([k]) => !k.startsWith("GRPC_")));
  return { ...env, NO_COLOR: "1", ...extra };
}

interface Running {
  child: Deno.ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

function spawn(args: string[], env: Record<string, string>): Running {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  child.status.then((st) => void (out += `\n[exited ${st.code}]`));
  const sink = () => new WritableStream<string>({ write: (c) => void (out += c) });
  const reading = Promise.all([
    child.stdout.pipeThrough(new TextDecoderStream()).pipeTo(sink()),
    child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(sink()),
  ]);
  return {
    child,
    output: () => out,
    stop: async () => {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
      await child.status;
      await reading.catch(() => {});
    },
  };
}

async function until(cond: () => boolean | Promise<boolean>, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One call by a fresh client process; its one output line. */
async function callOnce(args: string[], env: Record<string, string>): Promise<string> {
  const out = await within(
    new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", APP, ...args],
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output(),
    30_000,
    "the gRPC client",
  );
  const text = new TextDecoder().decode(out.stdout).trim();
  return text === "" ? `NO OUTPUT: ${new TextDecoder().decode(out.stderr)}` : text;
}

Deno.test("proxyless gRPC: mutual TLS and AuthorizationPolicy from meshd's xDS", async () => {
  const dir = await Deno.makeTempDir({ prefix: "proxyless-" });
  const port = freePort();
  await Deno.mkdir(join(dir, "config"));
  await Deno.writeTextFile(join(dir, "config", "echo.yaml"), config(port));
  const peerAuthFile = join(dir, "config", "peer_authentication.yaml");
  await Deno.writeTextFile(peerAuthFile, peerAuthentication("STRICT"));
  const grpcPort = freePort(), securePort = freePort(), httpPort = freePort();
  const meshd = await startMeshdProcess(dir, grpcPort, [], {
    ports: { secure: securePort, http: httpPort },
    ready: "meshd ready",
    timeoutMs: 30_000,
  });
  const running: Running[] = [];
  try {
    const root = await fetch(`http://127.0.0.1:${httpPort}/debug/rootCert`);
    await Deno.writeTextFile(join(dir, "root-cert.pem"), await root.text());
    const tokens = await BootstrapTokenIssuer.open(join(dir, "ca"), {
      audiences: ["mesh-ca"],
      create: false,
    });
    const agent = async (ns: string, sa: string, name: string, address: string): Promise<string> => {
      const { token } = await tokens.issue({ namespace: ns, serviceAccount: sa });
      await Deno.writeTextFile(join(dir, `${name}.token`), token);
      const out = join(dir, name);
      running.push(spawn([
        "run",
        "--allow-read",
        "--allow-write",
        "--allow-env",
        "--allow-net",
        "--allow-sys",
        PROXY,
        `--proxyless=${out}`,
        `--discoveryAddress=127.0.0.1:${grpcPort}`,
        `--caAddress=127.0.0.1:${securePort}`,
        "--discoveryServerName=meshd.mesh-system.svc",
        `--namespace=${ns}`,
        `--serviceAccount=${sa}`,
        `--workloadEntry=${name}`,
        `--address=${address}`,
        `--tokenFile=${join(dir, `${name}.token`)}`,
        `--rootCertFile=${join(dir, "root-cert.pem")}`,
      ], grpcEnv({})));
      const bootstrap = join(out, "grpc-bootstrap.json");
      await until(
        () => Deno.stat(bootstrap).then(() => true, () => false),
        20_000,
        () => `${name}'s bootstrap (${running.at(-1)!.output()})`,
      );
      return bootstrap;
    };
    const serverBootstrap = await agent("echo", "echo-server", "echo-1", "127.0.0.1");
    const clientBootstrap = await agent("client", "caller", "caller-1", "127.0.0.2");
    const server = spawn(
      ["run", "--allow-all", APP, "server", String(port)],
      grpcEnv({
        GRPC_XDS_BOOTSTRAP: serverBootstrap,
        GRPC_XDS_EXPERIMENTAL_RBAC: "true",
        GRPC_TRACE: "xds_client,xds_server",
        GRPC_VERBOSITY: "DEBUG",
      }),
    );
    running.push(server);
    await until(
      () => server.output().includes("SERVING"),
      20_000,
      () => `the server (${server.output().slice(-6000)})`,
    );

    const clientEnv = grpcEnv({ GRPC_XDS_BOOTSTRAP: clientBootstrap });
    const call = () => callOnce(["client", `xds:///echo.echo.svc:${port}`], clientEnv);
    /** Calls (a fresh process each time) until the answer starts with `prefix`. */
    const expectFrom = async (caller: () => Promise<string>, prefix: string, what: string) => {
      let last = "";
      await until(
        async () => (last = await caller()).startsWith(prefix),
        30_000,
        () => `${what}: last ${last}`,
      );
    };
    const expect = (prefix: string, what: string) => expectFrom(call, prefix, what);
    await expect("OK echo hello", "no policy: the call goes through");

    const policyFile = join(dir, "config", "policy.yaml");
    await Deno.writeTextFile(policyFile, policy("DENY", "cluster.local/ns/client/sa/caller"));
    await expect("ERR PERMISSION_DENIED", "DENY for the caller");

    await Deno.writeTextFile(policyFile, policy("ALLOW", "cluster.local/ns/client/sa/caller"));
    await expect("OK echo hello", "ALLOW for the caller");

    await Deno.writeTextFile(policyFile, policy("ALLOW", "cluster.local/ns/client/sa/someone-else"));
    await expect("ERR PERMISSION_DENIED", "ALLOW for another principal only");

    // A client with a certificate for the caller's identity, but from a CA the mesh does not trust.
    const foreign = await startCa(join(dir, "foreign-ca"));
    try {
      const leaf = await makeCsr({ uris: ["spiffe://cluster.local/ns/client/sa/caller"] });
      const chain = await foreign.sign({
        csrPem: leaf.csrPem,
        namespace: "client",
        serviceAccount: "caller",
      });
      await Deno.writeTextFile(join(dir, "f-cert.pem"), chain.join(""));
      await Deno.writeTextFile(join(dir, "f-key.pem"), leaf.privateKeyPem);
    } finally {
      await foreign.stop();
    }
    // The same client without xDS, trusting the mesh root: with the agent's certificate it gets through
    // the handshake (and is denied by the policy in force), with the foreign one it does not.
    const direct = (...certAndKey: string[]) =>
      callOnce(
        ["client-foreign", `127.0.0.1:${port}`, join(dir, "root-cert.pem"), ...certAndKey],
        grpcEnv({}),
      );
    const caller = join(dir, "caller-1");
    const good = await direct(join(caller, "cert-chain.pem"), join(caller, "key.pem"));
    assert.match(good, /^ERR PERMISSION_DENIED/, good);
    const bad = await direct(join(dir, "f-cert.pem"), join(dir, "f-key.pem"));
    assert.match(bad, /^ERR UNAVAILABLE/, bad);
    const none = await direct();
    assert.match(none, /^ERR UNAVAILABLE/, `without a client certificate: ${none}`);

    // DISABLE: the server takes plain text (no principal: denied by the ALLOW for someone else).
    const plain = () => callOnce(["client-plain", `127.0.0.1:${port}`], grpcEnv({}));
    const expectPlain = (prefix: string, what: string) => expectFrom(plain, prefix, what);
    await Deno.writeTextFile(peerAuthFile, peerAuthentication("DISABLE"));
    await expectPlain("ERR PERMISSION_DENIED", "DISABLE: a plain-text client reaches the server's RBAC");

    // PERMISSIVE on a workload with the tlsMode label: mutual TLS only (istiod's grpcgen lds.go), so the
    // plain-text client fails the connection and the xDS client gets through with the caller's principal.
    await Deno.writeTextFile(policyFile, policy("ALLOW", "cluster.local/ns/client/sa/caller"));
    await Deno.writeTextFile(peerAuthFile, peerAuthentication("PERMISSIVE"));
    await expectPlain("ERR UNAVAILABLE", "PERMISSIVE: plain text refused");
    await expect("OK echo hello", "PERMISSIVE: the xDS client over mutual TLS, ALLOW for the caller");
    const noCert = await direct();
    assert.match(noCert, /^ERR UNAVAILABLE/, `PERMISSIVE, without a client certificate: ${noCert}`);
  } finally {
    for (const r of running.reverse()) await r.stop();
    await meshd.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
