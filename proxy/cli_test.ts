import assert from "node:assert/strict";
import { runProxyCli } from "./cli.ts";
import type { ProxyOptions } from "./options/flags.ts";

async function run(args: string[], env: Record<string, string> = {}) {
  let out = "";
  let err = "";
  let options: ProxyOptions | undefined;
  const code = await runProxyCli(args, {
    stdout: (t) => (out += t),
    stderr: (t) => (err += t),
    env,
    cores: 3,
    hostname: () => "VM-7",
  }, (o) => {
    options = o;
    return Promise.resolve(0);
  });
  return { code, out, err, options };
}

const BASE = ["--namespace", "foo", "--workloadEntry", "httpbin-1", "--address", "10.1.0.2"];

Deno.test("proxy --help: every flag, and PARTIAL naming what is missing in gateway mode", async () => {
  const r = await run(["--help"]);
  assert.equal(r.code, 0);
  assert.match(r.out, /PARTIAL/);
  assert.match(
    r.out,
    /--type router runs an ingress gateway .*PARTIAL: HTTP servers,\s+and HTTPS servers with tls.mode SIMPLE or MUTUAL/s,
  );
  for (
    const f of [
      "discoveryAddress",
      "namespace",
      "serviceAccount",
      "workloadEntry",
      "workloadGroup",
      "labels",
      "address",
      "tokenFile",
      "rootCertFile",
      "inbound",
      "outbound",
      "proxy-admin-port",
      "concurrency",
    ]
  ) {
    assert.match(r.out, new RegExp(`--${f} `), f);
  }
});

Deno.test("proxy: defaults and values parsed", async () => {
  const r = await run([
    ...BASE,
    "--inbound",
    "8080=127.0.0.1:18080",
    "--inbound",
    "9090=[::1]:19090",
    "--labels",
    "app=httpbin,version=v1",
    "--proxyComponentLogLevel",
    "inbound:debug",
  ]);
  assert.equal(r.code, 0, r.err);
  const o = r.options!;
  assert.equal(o.discoveryAddress, "meshd.mesh-system.svc:15012");
  assert.equal(o.plaintext, false);
  assert.equal(o.adminPort, 15000);
  assert.equal(o.concurrency, 3, "0 means one per core");
  assert.equal(o.nodeName, "httpbin-1");
  assert.equal(o.inboundBindAddress, "10.1.0.2");
  assert.deepEqual(o.labels, { app: "httpbin", version: "v1" });
  assert.deepEqual(o.inbound, [
    { port: 8080, appAddress: "127.0.0.1", appPort: 18080 },
    { port: 9090, appAddress: "::1", appPort: 19090 },
  ]);
  assert.equal(o.logLevels.inbound, "debug");
  assert.equal(o.logLevels.agent, "warning");
});

Deno.test("proxy: several meshd addresses, each checked and named when bad", async () => {
  const list = "10.247.0.2:15012, 10.247.0.3:15012";
  const ok = await run([...BASE, "--discoveryAddress", list, "--caAddress", "meshd-0:15012,meshd-1:15012"]);
  assert.equal(ok.code, 0, ok.err);
  assert.equal(ok.options!.discoveryAddress, list);
  assert.equal(ok.options!.caAddress, "meshd-0:15012,meshd-1:15012");
  const bad = await run([...BASE, "--discoveryAddress", "10.247.0.2:15012,nohost", "--caAddress", " , "]);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /^error: --discoveryAddress: nohost is not an address/m);
  assert.match(bad.err, /^error: --caAddress: " , " names no address/m);
});

Deno.test("proxy: environment defaults and the WorkloadGroup instance name from the host name", async () => {
  const r = await run(["--workloadGroup", "vms"], { POD_NAMESPACE: "bar", INSTANCE_IP: "10.0.0.9" });
  assert.equal(r.code, 0, r.err);
  assert.equal(r.options!.namespace, "bar");
  assert.equal(r.options!.address, "10.0.0.9");
  assert.equal(r.options!.workloadGroup, "vms");
  assert.equal(r.options!.nodeName, "vm-7");
});

Deno.test("proxy: every bad value is reported at once, naming its flag; exit 1", async () => {
  const r = await run([
    "--namespace",
    "Foo",
    "--address",
    "10.1.0",
    "--workloadEntry",
    "a",
    "--workloadGroup",
    "b",
    "--inbound",
    "8080",
    "--inbound",
    "70000=127.0.0.1:1",
    "--inbound",
    "8081=localhost:1",
    "--proxy-admin-port",
    "abc",
    "--concurrency",
    "x",
    "--controlPlaneAuthPolicy",
    "TLS",
    "--discoveryAddress",
    "nohost",
    "--labels",
    "novalue",
    "--proxyLogLevel",
    "verbose",
    "--proxyComponentLogLevel",
    "nope:debug",
  ]);
  assert.equal(r.code, 1);
  assert.equal(r.options, undefined);
  for (
    const expected of [
      /^error: --namespace: Foo is not a valid namespace/m,
      /^error: --address: 10.1.0 is not an IP address/m,
      /^error: --workloadEntry, --workloadGroup: give exactly one of them/m,
      /^error: --inbound: 8080 must be formatted as <port>=<host>:<port>/m,
      /^error: --inbound: 70000=127.0.0.1:1 has port 70000, out of range 1..65535/m,
      /^error: --inbound: 8081=localhost:1 needs an application IP address/m,
      /^error: --proxy-admin-port: abc is not a port number/m,
      /^error: --concurrency: x is not a whole number/m,
      /^error: --controlPlaneAuthPolicy: TLS must be MUTUAL_TLS or NONE/m,
      /^error: --discoveryAddress: nohost is not an address/m,
      /^error: --labels: novalue must be formatted as key=value/m,
      /^error: --proxyLogLevel: verbose is not a level/m,
      /^error: --proxyComponentLogLevel: nope:debug names no logger/m,
    ]
  ) assert.match(r.err, expected);
});

Deno.test("proxy: required identity, repeated ports and the admin port colliding with an inbound port", async () => {
  const r = await run([
    "--inbound",
    "8080=127.0.0.1:1",
    "--inbound",
    "8080=127.0.0.1:2",
    "--proxy-admin-port",
    "8080",
    "--outbound",
    "127.0.0.1:8080",
  ]);
  assert.equal(r.code, 1);
  assert.match(r.err, /^error: --namespace: required \(or set POD_NAMESPACE\)$/m);
  assert.match(r.err, /^error: --address: required \(or set INSTANCE_IP\)$/m);
  assert.match(r.err, /^error: --inbound: 8080=127.0.0.1:2 repeats port 8080$/m);
  assert.match(r.err, /^error: --proxy-admin-port: 8080 is also an --inbound port$/m);
  assert.match(
    r.err,
    /^error: --outbound: 127.0.0.1:8080 uses port 8080 of an --inbound port or the admin port$/m,
  );
});

Deno.test("proxy: an unknown flag is a usage error (exit 2)", async () => {
  const r = await run([...BASE, "--nope"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /unknown option '--nope'/);
});

Deno.test("proxy: the limit flags: defaults, --help, values, and each bad value named", async () => {
  const help = await run(["--help"]);
  for (
    const [flag, dflt] of [["requestHeadersTimeout", "10s"], ["requestTimeout", "0s"], [
      "idleTimeout",
      "5m0s",
    ], [
      "maxConnections",
      "10000",
    ]]
  ) {
    assert.match(help.out, new RegExp(`--${flag} <[a-z]+>[\\s\\S]*?\\(default: "${dflt}"\\)`), flag);
  }
  const defaults = await run(BASE);
  assert.deepEqual(defaults.options?.connectionLimits, {
    requestHeadersTimeoutMs: 10_000,
    requestTimeoutMs: 0,
    idleTimeoutMs: 300_000,
    maxConnections: 10_000,
  });
  const given = await run([
    ...BASE,
    "--requestHeadersTimeout",
    "2.5s",
    "--requestTimeout",
    "1m30s",
    "--idleTimeout",
    "0s",
    "--maxConnections",
    "0",
  ]);
  assert.equal(given.code, 0, given.err);
  assert.deepEqual(given.options?.connectionLimits, {
    requestHeadersTimeoutMs: 2500,
    requestTimeoutMs: 90_000,
    idleTimeoutMs: 0,
    maxConnections: 0,
  });
  const bad = await run([
    ...BASE,
    "--requestHeadersTimeout",
    "10",
    "--requestTimeout",
    "25h",
    "--idleTimeout",
    "-1s",
    "--maxConnections",
    "-5",
  ]);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /--requestHeadersTimeout: 10 is not a duration/);
  assert.match(bad.err, /--requestTimeout: 25h is out of range 1ms\.\.24h/);
  assert.match(bad.err, /--idleTimeout: -1s is out of range 1ms\.\.24h/);
  assert.match(bad.err, /--maxConnections: -5 is not a whole number 0\.\.10000000/);
});

Deno.test("proxy --meshTlsClient: node by default, deno when asked, another value named", async () => {
  assert.match((await run(["--help"])).out, /--meshTlsClient <deno\|node>[\s\S]*?\(default: "node"\)/);
  assert.equal((await run(BASE)).options?.meshTlsClient, "node");
  const deno = await run([...BASE, "--meshTlsClient", "deno"]);
  assert.equal(deno.code, 0, deno.err);
  assert.equal(deno.options?.meshTlsClient, "deno");
  const bad = await run([...BASE, "--meshTlsClient", "openssl"]);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /--meshTlsClient: openssl is not one of deno, node/);
});

Deno.test("proxy --proxyless: the output directory reaches the run; data-path flags warn", async () => {
  const plain = await run([...BASE, "--proxyless", "/tmp/x", "--discoveryAddress", "meshd:15010"]);
  assert.equal(plain.code, 0);
  assert.equal(plain.options?.proxyless, "/tmp/x");
  assert.doesNotMatch(plain.err, /warning/);
  const withInbound = await run([...BASE, "--proxyless", "/tmp/x", "--inbound", "8080=127.0.0.1:18080"]);
  assert.match(withInbound.err, /warning: --inbound and --outbound have no effect with --proxyless/);
  assert.equal((await run(BASE)).options?.proxyless, undefined);
  const secure = await run([...BASE, "--proxyless", "/tmp/x"]);
  assert.match(secure.err, /warning: --proxyless: gRPC reaches meshd in plain text/);
});
