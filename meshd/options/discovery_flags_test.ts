import assert from "node:assert/strict";
import { Command } from "@commander-js/extra-typings";
import {
  addDiscoveryFlags,
  type DiscoveryFlagsResult,
  flagHelp,
  flagOption,
  readDiscoveryFlags,
  validateDiscoveryFlags,
} from "./discovery_flags.ts";
import { INSECURE_CIPHER_SUITES, SECURE_CIPHER_SUITES } from "./cipher_suites.ts";
import { DISCOVERY_FLAGS } from "./discovery_flag_table.ts";
import { readEnvironment } from "./environment.ts";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

/** Parses `meshd discovery <args>` with commander, as the CLI does, and validates the result. */
function discovery(args: string[], vars: Record<string, string> = {}): DiscoveryFlagsResult {
  const root = new Command("meshd").exitOverride();
  for (const f of DISCOVERY_FLAGS) if (f.global) root.addOption(flagOption(f));
  const cmd = addDiscoveryFlags(new Command("discovery").exitOverride());
  root.addCommand(cmd);
  root.parse(["discovery", ...args], { from: "user" });
  return validateDiscoveryFlags(readDiscoveryFlags(cmd), { environment: readEnvironment(vars).env });
}

Deno.test("table: every flag of the seed, each once, and meshd's own --servingChildren and --grpcTransport", () => {
  assert.equal(DISCOVERY_FLAGS.length, 37);
  assert.equal(new Set(DISCOVERY_FLAGS.map((f) => f.name)).size, 37);
  assert.ok(DISCOVERY_FLAGS.some((f) => f.name === "servingChildren"));
  assert.ok(DISCOVERY_FLAGS.some((f) => f.name === "grpcTransport"));
  assert.deepEqual(DISCOVERY_FLAGS.filter((f) => f.global).map((f) => f.name), ["vklog"]);
  assert.deepEqual(DISCOVERY_FLAGS.filter((f) => f.short).map((f) => [f.short, f.name]), [[
    "n",
    "namespace",
  ]]);
});

Deno.test("table: --help says 'no effect yet' exactly for the flags without effect", () => {
  for (const f of DISCOVERY_FLAGS) {
    assert.equal(flagHelp(f).includes("(no effect yet: "), f.effect === "no effect yet", f.name);
    if (f.effect === "no effect yet") assert.ok(f.reason, f.name);
  }
  const noEffect = DISCOVERY_FLAGS.filter((f) => f.effect === "no effect yet").map((f) => f.name);
  assert.deepEqual(noEffect, [
    "clusterAliases",
    "clusterRegistriesNamespace",
    "cniNamespace",
    "networksConfig",
    "profile",
    "tls-cipher-suites",
    "vklog",
  ]);
});

Deno.test("table: --help shows defaults as pflag does", () => {
  const help = (name: string) => flagHelp(DISCOVERY_FLAGS.find((f) => f.name === name)!);
  assert.equal(help("ctrlz_port"), "Introspection port (default 9876)");
  assert.equal(help("domain"), 'DNS domain suffix (default "cluster.local")');
  assert.equal(help("log_target"), "Log destinations: paths, or stdout, stderr (default [stdout])");
  assert.equal(help("caCertFile"), "x509 server CA certificate file");
  assert.match(help("namespace"), /\(default \$POD_NAMESPACE, else "mesh-system"\)$/);
});

Deno.test("defaults: every default is valid and typed", () => {
  const r = discovery([]);
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.warnings, []);
  const o = r.options;
  assert.deepEqual(o.grpcAddr, { host: "", port: 15010 });
  assert.deepEqual(o.secureGRPCAddr, { host: "", port: 15012 });
  assert.deepEqual(o.httpAddr, { host: "", port: 8080 });
  assert.deepEqual(o.httpsAddr, { host: "", port: 15017 });
  assert.deepEqual(o.monitoringAddr, { host: "", port: 15014 });
  assert.equal(o.ctrlzAddress, "localhost");
  assert.equal(o.ctrlzPort, 9876);
  assert.equal(o.domain, "cluster.local");
  assert.equal(o.clusterID, "Orchestrator");
  assert.equal(o.namespace, "mesh-system");
  assert.equal(o.meshConfig, "./etc/mesh/config/mesh");
  assert.equal(o.keepaliveIntervalMs, 30_000);
  assert.equal(o.keepaliveTimeoutMs, 10_000);
  assert.equal(o.keepaliveMaxServerConnectionAgeMs, 9_223_372_036_854.775);
  assert.equal(o.shutdownDurationMs, 10_000);
  assert.equal(o.orchApiBurst, 160);
  assert.equal(o.orchApiQPS, 80);
  assert.deepEqual(o.registries, ["Orchestrator"]);
  assert.deepEqual(o.tlsCipherSuites, []);
  assert.deepEqual(o.clusterAliases, {});
  assert.equal(o.profile, false);
  assert.equal(o.vklog, 0);
  assert.deepEqual(o.log.targets, ["stdout"]);
  assert.equal(o.log.asJson, false);
  assert.equal(o.log.outputLevels.ads, "info");
});

const good: { args: string[]; vars?: Record<string, string>; check: (r: DiscoveryFlagsResult) => void }[] = [
  { args: ["--ctrlz_port", "0x10"], check: (r) => assert.equal(r.options.ctrlzPort, 16) },
  { args: ["--ctrlz_port=65535"], check: (r) => assert.equal(r.options.ctrlzPort, 65535) },
  { args: ["--ctrlz_address", "*"], check: (r) => assert.equal(r.options.ctrlzAddress, "*") },
  { args: ["--ctrlz_address", "::1"], check: (r) => assert.equal(r.options.ctrlzAddress, "::1") },
  {
    args: ["--keepaliveInterval", "1m30s"],
    check: (r) => assert.equal(r.options.keepaliveIntervalMs, 90_000),
  },
  { args: ["--shutdownDuration", "0s"], check: (r) => assert.equal(r.options.shutdownDurationMs, 0) },
  {
    args: ["--grpcAddr", "127.0.0.1:0"],
    check: (r) => assert.deepEqual(r.options.grpcAddr, { host: "127.0.0.1", port: 0 }),
  },
  {
    args: ["--httpAddr", "[::1]:8081"],
    check: (r) => assert.deepEqual(r.options.httpAddr, { host: "::1", port: 8081 }),
  },
  {
    args: ["--monitoringAddr", "localhost:9090"],
    check: (r) => assert.equal(r.options.monitoringAddr.port, 9090),
  },
  { args: ["-n", "foo"], check: (r) => assert.equal(r.options.namespace, "foo") },
  { args: [], vars: { POD_NAMESPACE: "bar" }, check: (r) => assert.equal(r.options.namespace, "bar") },
  { args: [], vars: { POD_NAMESPACE: "bar" }, check: (r) => assert.equal(r.options.cniNamespace, "bar") },
  {
    args: ["--namespace", "foo"],
    vars: { POD_NAMESPACE: "bar" },
    check: (r) => assert.equal(r.options.namespace, "foo"),
  },
  { args: [], vars: { CLUSTER_ID: "east" }, check: (r) => assert.equal(r.options.clusterID, "east") },
  {
    args: ["--clusterID", "west"],
    vars: { CLUSTER_ID: "east" },
    check: (r) => assert.equal(r.options.clusterID, "west"),
  },
  { args: ["--log_as_json"], check: (r) => assert.equal(r.options.log.asJson, true) },
  { args: ["--log_as_json=false"], check: (r) => assert.equal(r.options.log.asJson, false) },
  { args: ["--log_as_json=1"], check: (r) => assert.equal(r.options.log.asJson, true) },
  {
    args: ["--log_output_level", "ads:debug,ca:none"],
    check: (r) => assert.equal(r.options.log.outputLevels.ca, "none"),
  },
  { args: ["--log_caller", "ads"], check: (r) => assert.ok(r.options.log.callers.has("ads")) },
  {
    args: ["--log_target", "stderr", "--log_target", "/tmp/a,b.log"],
    check: (r) => assert.deepEqual(r.options.log.targets, ["stderr", "/tmp/a,b.log"]),
  },
  {
    args: ["--clusterAliases", "a=b,c=d", "--clusterAliases", "e=f=g"],
    check: (r) => assert.deepEqual(r.options.clusterAliases, { a: "b", c: "d", e: "f=g" }),
  },
  {
    args: ["--registries", "Mock,Orchestrator"],
    check: (r) => {
      assert.deepEqual(r.options.registries, ["Mock", "Orchestrator"]);
      assert.deepEqual(r.warnings, ["--registries: Mock has no effect: meshd has no mock registry"]);
    },
  },
  { args: ["--orchApiQPS", "12.5"], check: (r) => assert.equal(r.options.orchApiQPS, 12.5) },
  { args: ["--orchApiQPS", "0.1"], check: (r) => assert.equal(r.options.orchApiQPS, Math.fround(0.1)) },
  { args: ["--orchApiBurst", "1_000"], check: (r) => assert.equal(r.options.orchApiBurst, 1000) },
  { args: ["--orchApiBurst", "-0o17"], check: (r) => assert.equal(r.options.orchApiBurst, -15) },
  { args: ["--vklog", "4"], check: (r) => assert.equal(r.options.vklog, 4) },
  {
    args: ["--tlsCertFile", "c.pem", "--tlsKeyFile", "k.pem"],
    check: (r) => assert.equal(r.options.tlsKeyFile, "k.pem"),
  },
  {
    args: ["--tls-cipher-suites", "TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
    check: (r) =>
      assert.deepEqual(r.options.tlsCipherSuites, [
        "TLS_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
      ]),
  },
];
for (const c of good) {
  Deno.test(`valid: ${c.args.join(" ") || "(no flags)"}${c.vars ? ` with ${JSON.stringify(c.vars)}` : ""}`, () => {
    const r = discovery(c.args, c.vars);
    assert.deepEqual(r.errors, []);
    c.check(r);
  });
}

const bad: { args: string[]; vars?: Record<string, string>; error: string | RegExp }[] = [
  { args: ["--ctrlz_port", "70000"], error: "--ctrlz_port: 70000 is out of range 0..65535" },
  { args: ["--ctrlz_port", "-1"], error: "--ctrlz_port: -1 is not an unsigned integer" },
  { args: ["--ctrlz_port", "port"], error: "--ctrlz_port: port is not an unsigned integer" },
  { args: ["--ctrlz_address", "a b"], error: /^--ctrlz_address: "a b" is not a host name or IP address/ },
  {
    args: ["--keepaliveInterval", "abc"],
    error: "--keepaliveInterval: abc is not a duration; use Go syntax, for example 500ms, 30s, 1h0m0s",
  },
  { args: ["--keepaliveTimeout", "10"], error: /^--keepaliveTimeout: 10 is not a duration: missing unit;/ },
  { args: ["--keepaliveTimeout", "0s"], error: "--keepaliveTimeout: 0s must be positive" },
  {
    args: ["--keepaliveMaxServerConnectionAge", "3000000h"],
    error: /: 3000000h is out of range; the largest/,
  },
  { args: ["--shutdownDuration", "-1s"], error: "--shutdownDuration: -1s must not be negative" },
  {
    args: ["--log_output_level", "adz:debug"],
    error: /^--log_output_level: "adz:debug": unknown scope "adz"/,
  },
  {
    args: ["--log_output_level", "ads:loud"],
    error: /^--log_output_level: "ads:loud": unknown level "loud"/,
  },
  { args: ["--log_stacktrace_level", "verbose"], error: /^--log_stacktrace_level: "verbose": unknown level/ },
  { args: ["--log_caller", "nope"], error: /^--log_caller: unknown scope "nope"/ },
  { args: ["--log_as_json=maybe"], error: /^--log_as_json: maybe is not a boolean/ },
  { args: ["--profile=yes"], error: /^--profile: yes is not a boolean/ },
  { args: ["--grpcTransport", "nghttp2"], error: /^--grpcTransport: nghttp2.*use codec or children/ },
  { args: ["--grpcAddr", "15010"], error: "--grpcAddr: 15010 is not an address; use host:port or :port" },
  { args: ["--httpAddr", ":http"], error: "--httpAddr: :http has port http; a port is a number 0..65535" },
  {
    args: ["--monitoringAddr", ":70000"],
    error: "--monitoringAddr: :70000 has port 70000, out of range 0..65535",
  },
  {
    args: ["--secureGRPCAddr", "bad_host:1"],
    error: "--secureGRPCAddr: bad_host:1 has an invalid host bad_host",
  },
  { args: ["--httpsAddr", "::1:80"], error: /^--httpsAddr: ::1:80 is not an address/ },
  { args: ["--domain", "cluster..local"], error: "--domain: cluster..local is not a valid DNS domain" },
  { args: ["--namespace", "Mesh_System"], error: /^--namespace: Mesh_System is not a valid namespace/ },
  {
    args: ["--cniNamespace", "cni"],
    vars: { POD_NAMESPACE: "Bad" },
    error: /^--namespace \(from \$POD_NAMESPACE\): Bad is not a valid namespace/,
  },
  { args: ["--clusterID="], error: '--clusterID: "" must not be empty' },
  { args: ["--orchApiBurst", "1.5"], error: "--orchApiBurst: 1.5 is not an integer" },
  { args: ["--orchApiQPS", "1e39"], error: "--orchApiQPS: 1e39 is out of range for a float32" },
  { args: ["--orchApiQPS", "fast"], error: /^--orchApiQPS: fast is not a decimal number/ },
  { args: ["--vklog", "x"], error: "--vklog: x is not an integer" },
  { args: ["--clusterAliases", "a"], error: "--clusterAliases: a must be formatted as key=value" },
  { args: ["--registries", "Kube"], error: "--registries: Kube is not a registry; use Orchestrator or Mock" },
  {
    args: ["--tls-cipher-suites", "TLS_FOO"],
    error: /^--tls-cipher-suites: TLS_FOO is not a supported cipher suite; the suites are TLS_AES_128/,
  },
  {
    args: ["--tlsCertFile", "c.pem"],
    error: "--tlsCertFile: is set but --tlsKeyFile is not; give both or neither",
  },
  {
    args: ["--tlsKeyFile", "k.pem"],
    error: "--tlsKeyFile: is set but --tlsCertFile is not; give both or neither",
  },
  { args: ["--log_target="], error: '--log_target: "" is not a target; use stdout, stderr or a file path' },
];
for (const c of bad) {
  Deno.test(`invalid: ${c.args.join(" ") || JSON.stringify(c.vars)}`, () => {
    const r = discovery(c.args, c.vars);
    assert.equal(r.errors.length, 1, r.errors.join("\n"));
    if (typeof c.error === "string") assert.equal(r.errors[0], c.error);
    else assert.match(r.errors[0], c.error);
  });
}

Deno.test("invalid: every bad flag is reported, not only the first", () => {
  const r = discovery([
    "--ctrlz_port",
    "70000",
    "--keepaliveInterval",
    "abc",
    "--log_output_level",
    "adz:x",
    "--grpcAddr",
    "x",
  ]);
  assert.deepEqual(r.errors.map((e) => e.split(":")[0]).sort(), [
    "--ctrlz_port",
    "--grpcAddr",
    "--keepaliveInterval",
    "--log_output_level",
  ]);
});

Deno.test("warnings: insecure cipher suites and flags without effect, when given", () => {
  const r = discovery([
    "--tls-cipher-suites",
    "TLS_RSA_WITH_RC4_128_SHA",
    "--profile",
    "--cniNamespace",
    "x",
  ]);
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.options.tlsCipherSuites, ["TLS_RSA_WITH_RC4_128_SHA"]);
  assert.deepEqual(r.warnings.sort(), [
    "--cniNamespace has no effect yet: no CNI component yet",
    "--profile has no effect yet: no profiling interface yet",
    "--tls-cipher-suites has no effect yet: Deno's TLS stack chooses the suites itself (TLS 1.3 and ECDHE AEAD suites only; no CBC, RC4 or 3DES)",
    "--tls-cipher-suites: TLS_RSA_WITH_RC4_128_SHA is insecure",
  ]);
});

Deno.test("cipher suites: the seed's 13 preferred and 12 insecure suites", () => {
  assert.equal(Object.keys(SECURE_CIPHER_SUITES).length, 13);
  assert.equal(Object.keys(INSECURE_CIPHER_SUITES).length, 12);
});

Deno.test(requires(commandMissing("openssl"), {
  name: "cipher suites: the OpenSSL names agree with `openssl ciphers -stdname`",
  fn: async () => {
    const out = await new Deno.Command("openssl", { args: ["ciphers", "-stdname", "ALL:@SECLEVEL=0"] })
      .output();
    const known = new Map(
      new TextDecoder().decode(out.stdout).trim().split("\n").map((l) => l.split(/\s+/)).map((
        w,
      ) => [w[0], w[2]]),
    );
    for (const [iana, name] of Object.entries({ ...SECURE_CIPHER_SUITES, ...INSECURE_CIPHER_SUITES })) {
      // OpenSSL 3 builds leave out RC4 and 3DES; the others must match.
      if (known.has(iana)) assert.equal(name, known.get(iana), iana);
      else assert.match(iana, /RC4|3DES/);
    }
  },
}));

Deno.test("--servingChildren warns when --grpcTransport codec makes it inert, not with children", () => {
  assert.deepEqual(discovery(["--servingChildren", "3"]).warnings, [
    "--servingChildren has no effect with --grpcTransport codec (the default): no child serves",
  ]);
  const children = discovery(["--grpcTransport", "children", "--servingChildren", "3"]);
  assert.deepEqual(children.warnings, []);
  assert.equal(children.options.grpcTransport, "children");
  assert.equal(children.options.servingChildren, 3);
  assert.equal(discovery([]).options.grpcTransport, "codec");
});
