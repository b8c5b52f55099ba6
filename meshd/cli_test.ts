import assert from "node:assert/strict";
import { DISCOVERY_FLAGS } from "./options/discovery_flags.ts";
import { commandMissing, requires } from "../shared/internal/testing/prerequisites.ts";
import { processDeadline } from "../shared/internal/testing/deadline.ts";

const MAIN = new URL("./main.ts", import.meta.url).pathname;
const ROOT = new URL("../", import.meta.url).pathname;

interface Run {
  code: number;
  out: string;
  err: string;
}

/**
 * Runs the real meshd program with the permissions of `deno task meshd` (plus `extra`), in an
 * environment holding only `vars` and what Deno needs, so that the machine's variables do not leak in.
 */
async function meshd(
  args: string[],
  options: { vars?: Record<string, string>; extra?: string[] } = {},
): Promise<Run> {
  const base: Record<string, string> = { NO_COLOR: "1" };
  for (const name of ["HOME", "PATH", "DENO_DIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) base[name] = value;
  }
  const deadline = processDeadline(60_000, `meshd ${args.join(" ")}`);
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", ...(options.extra ?? []), MAIN, ...args],
    cwd: ROOT,
    clearEnv: true,
    env: { ...base, ...options.vars },
    stdin: "null",
    signal: deadline.signal,
  }).output();
  deadline.end();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout), err: dec.decode(r.stderr) };
}

/**
 * Runs `meshd discovery` for real on free loopback ports with a temp config and CA directory, waits
 * until it logs "meshd ready" (or exits), then stops it with SIGTERM. `args` come after the defaults,
 * so they win.
 */
async function discovery(
  args: string[],
  options: {
    vars?: Record<string, string>;
    extra?: string[];
    writable?: boolean;
    /** Runs while meshd serves, given its output so far. */
    whileReady?: (out: string) => Promise<void>;
  } = {},
): Promise<Run> {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/config`);
  const base: Record<string, string> = { NO_COLOR: "1", ROOT_CA_DIR: `${dir}/ca` };
  for (const name of ["HOME", "PATH", "DENO_DIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) base[name] = value;
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-env",
      "--allow-net",
      "--allow-sys",
      `--allow-run=${Deno.execPath()}`,
      ...(options.writable === false ? [] : [`--allow-write=${dir}/ca`]),
      ...(options.extra ?? []),
      MAIN,
      "discovery",
      ...["--configDir", `${dir}/config`, "--meshConfig", `${dir}/no-mesh-config`],
      ...["--grpcAddr", "127.0.0.1:0", "--secureGRPCAddr", "127.0.0.1:0", "--httpAddr", "127.0.0.1:0"],
      ...["--monitoringAddr", "127.0.0.1:0", "--ctrlz_port", "0"],
      ...args,
    ],
    cwd: ROOT,
    clearEnv: true,
    env: { ...base, ...options.vars },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  let err = "";
  const collect = async (stream: ReadableStream<Uint8Array>, add: (t: string) => void) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) add(chunk);
  };
  const reading = Promise.all([
    collect(child.stdout, (t) => (out += t)),
    collect(child.stderr, (t) => (err += t)),
  ]);
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const deadline = Date.now() + 30_000;
  while (!exited && !/meshd ready/.test(out + err) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  let failure: unknown;
  if (!exited && options.whileReady) await options.whileReady(out + err).catch((e) => (failure = e));
  if (!exited) child.kill("SIGTERM");
  const { code } = await status;
  await reading;
  await Deno.remove(dir, { recursive: true });
  if (failure) throw failure;
  return { code, out, err };
}

/** Help text with line wrapping undone, so that phrases can be matched. */
function flat(text: string): string {
  return text.replace(/\s+/g, " ");
}

Deno.test("root: the command tree, PARTIAL, --vklog", async () => {
  const r = await meshd(["--help"]);
  assert.equal(r.code, 0);
  for (const c of ["discovery", "request", "version", "completion"]) {
    assert.match(r.out, new RegExp(`^  ${c} `, "m"));
  }
  assert.match(flat(r.out), /PARTIAL/);
  assert.match(r.out, /--vklog <Level>/);
});

Deno.test("discovery --help: every flag of the seed, with its type, and the ones without effect say so", async () => {
  const r = await meshd(["discovery", "--help"]);
  assert.equal(r.code, 0);
  const help = flat(r.out);
  for (const f of DISCOVERY_FLAGS) {
    const placeholder = f.type === "bool" ? "[bool]" : `<${f.type}>`;
    assert.ok(help.includes(`--${f.name} ${placeholder}`), `--${f.name} missing`);
  }
  const noEffect = DISCOVERY_FLAGS.filter((f) => f.effect === "no effect yet").length;
  assert.equal(help.match(/\(no effect yet: /g)?.length, noEffect);
  assert.match(help, /-n, --namespace <string>/);
  assert.match(help, /--ctrlz_port <uint16> Introspection port \(default 9876\)/);
});

Deno.test("discovery: valid flags and environment log the effective configuration, serve, and stop on SIGTERM", async () => {
  const r = await discovery(["--log_output_level", "ads:debug"], {
    vars: { DISCO_DEBOUNCE_AFTER: "1s", POD_NAMESPACE: "istio-like" },
  });
  assert.equal(r.code, 0, r.err);
  assert.equal(r.err, "");
  const lines = r.out.trimEnd().split("\n");
  assert.match(lines[0], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\tinfo\teffective flags\t/);
  assert.match(lines[0], / ctrlzPort=0 /);
  assert.match(lines[0], / grpcAddr=127\.0\.0\.1:0 /);
  assert.match(lines[0], / namespace=istio-like /);
  assert.match(lines[0], / log_output_level=ads:debug /);
  assert.match(lines[1], /\teffective environment\t.*DISCO_DEBOUNCE_AFTER=1000 /);
  assert.match(r.out, /\tinfo\tca\tCA created a self-signed root in /);
  assert.match(r.out, /\tinfo\tmeshd ready in \d+ ms$/m);
  assert.match(
    r.out,
    /\tinfo\tshutting down: not accepting; up to 10000 ms for certificate requests in flight, then connections are left to the kernel \(no GOAWAY\)$/m,
  );
});

Deno.test("discovery: --log_as_json and --log_target stderr", async () => {
  const r = await discovery(["--log_as_json", "--log_target", "stderr"]);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, "");
  const records = r.err.trimEnd().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(records.slice(0, 2).map((o) => [o.level, o.msg]), [
    ["info", "effective flags"],
    ["info", "effective environment"],
  ]);
  assert.equal(records[0].ctrlzPort, 0);
  assert.ok(records.some((o) => /^meshd ready in \d+ ms$/.test(o.msg)));
});

Deno.test("discovery: --log_target to a file, and to nothing without write permission", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/meshd.log`;
  const ok = await discovery(["--log_target", file], { extra: [`--allow-write=${dir}`] });
  assert.equal(ok.code, 0, ok.err);
  assert.match(await Deno.readTextFile(file), /\tinfo\teffective flags\t/);
  const denied = await discovery(["--log_target", file], { writable: false });
  assert.equal(denied.code, 1);
  assert.match(denied.err, new RegExp(`^error: --log_target: cannot open ${file}: .*--allow-write`, "m"));
  await Deno.remove(dir, { recursive: true });
});

const badValues: { name: string; args: string[]; vars?: Record<string, string>; error: RegExp }[] = [
  {
    name: "--ctrlz_port 70000",
    args: ["--ctrlz_port", "70000"],
    error: /^error: --ctrlz_port: 70000 is out of range 0\.\.65535$/m,
  },
  {
    name: "--keepaliveInterval abc",
    args: ["--keepaliveInterval", "abc"],
    error: /^error: --keepaliveInterval: abc is not a duration; use Go syntax/m,
  },
  {
    name: "unknown log scope",
    args: ["--log_output_level", "adz:debug"],
    error: /^error: --log_output_level: "adz:debug": unknown scope "adz"/m,
  },
  {
    name: "unknown log level",
    args: ["--log_output_level", "ads:loud"],
    error:
      /^error: --log_output_level: "ads:loud": unknown level "loud"; the levels are debug, info, warn, error, fatal, none$/m,
  },
  {
    name: "unknown --log_caller scope",
    args: ["--log_caller", "nope"],
    error: /^error: --log_caller: unknown scope "nope"/m,
  },
  {
    name: "malformed duration in an environment variable",
    args: [],
    vars: { DISCO_DEBOUNCE_AFTER: "100" },
    error:
      /^error: environment variable DISCO_DEBOUNCE_AFTER: 100 is not a duration: missing unit; use Go syntax/m,
  },
  {
    name: "bad bool in an environment variable",
    args: [],
    vars: { XDS_AUTH: "yes" },
    error: /^error: environment variable XDS_AUTH: yes is not a boolean/m,
  },
  {
    name: "unknown cipher suite",
    args: ["--tls-cipher-suites", "TLS_NOPE"],
    error: /^error: --tls-cipher-suites: TLS_NOPE is not a supported cipher suite/m,
  },
];
for (const c of badValues) {
  Deno.test(`discovery: ${c.name} is a clear error, exit 1, nothing logged`, async () => {
    const r = await meshd(["discovery", ...c.args], { vars: c.vars });
    assert.equal(r.code, 1, r.out + r.err);
    assert.match(r.err, c.error);
    assert.equal(r.out, "");
  });
}

Deno.test("discovery: every error of flags and environment is printed, one line each", async () => {
  const r = await meshd(
    ["discovery", "--ctrlz_port", "70000", "--keepaliveInterval", "abc", "--log_output_level", "ads:loud"],
    { vars: { DISCO_DEBOUNCE_MAX: "soon", MESH_GPRC_MAXSTREAMS: "many" } },
  );
  assert.equal(r.code, 1);
  const errors = r.err.trimEnd().split("\n").filter((l) => l.startsWith("error: "));
  assert.equal(errors.length, 5, r.err);
  for (
    const what of [
      "--ctrlz_port",
      "--keepaliveInterval",
      "--log_output_level",
      "DISCO_DEBOUNCE_MAX",
      "MESH_GPRC_MAXSTREAMS",
    ]
  ) {
    assert.ok(errors.some((l) => l.includes(what)), what);
  }
});

Deno.test("discovery: insecure cipher suites and flags without effect are warnings", async () => {
  const r = await discovery([
    "--tls-cipher-suites",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "--kubeconfig",
    "k",
  ]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /^warning: --tls-cipher-suites: TLS_RSA_WITH_AES_128_CBC_SHA is insecure$/m);
  assert.match(r.err, /^warning: --kubeconfig has no effect yet: /m);
});

Deno.test("usage errors exit 2: unknown flag, unknown command, missing value", async () => {
  for (const args of [["discovery", "--bogus"], ["frobnicate"], ["discovery", "--ctrlz_port"]]) {
    const r = await meshd(args);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.err, /^error: /m);
  }
});

const versions: { args: string[]; check: (out: string) => void }[] = [
  { args: ["version"], check: (o) => assert.match(o, /^\d+\.\d+\.\d+\n$/) },
  { args: ["version", "-s"], check: (o) => assert.match(o, /^\d+\.\d+\.\d+\n$/) },
  { args: ["version", "--short=false"], check: (o) => assert.match(o, /^version: .*\ndeno: 2\.9\./m) },
  {
    args: ["version", "-o", "json"],
    check: (o) => assert.match(JSON.parse(o).clientVersion.version, /^\d+\.\d+/),
  },
  { args: ["version", "-o", "yaml"], check: (o) => assert.match(o, /^clientVersion:\n {2}version: /) },
];
for (const v of versions) {
  Deno.test(`version: ${v.args.join(" ")}`, async () => {
    const r = await meshd(v.args);
    assert.equal(r.code, 0, r.err);
    v.check(r.out);
  });
}

Deno.test("version: a bad -o or --short value is an error, exit 1", async () => {
  const xml = await meshd(["version", "-o", "xml"]);
  assert.equal(xml.code, 1);
  assert.match(xml.err, /Allowed choices are yaml, json/);
  const short = await meshd(["version", "--short=maybe"]);
  assert.equal(short.code, 1);
  assert.match(short.err, /maybe is not a boolean/);
});

/** An HTTP server on 127.0.0.1 that answers with what it got, and 404 for /missing. */
function echoServer(name: string): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/missing" || url.pathname === "/debug/missing") {
      return new Response("no such page", { status: 404 });
    }
    return new Response(`${name} ${req.method} ${url.pathname}${url.search} ${await req.text()}`);
  });
}

Deno.test("request: /debug paths go to --httpAddr, others to --monitoringAddr; status and body", async () => {
  const debug = echoServer("debug");
  const monitoring = echoServer("monitoring");
  const addrs = [
    "--httpAddr",
    `:${debug.addr.port}`,
    "--monitoringAddr",
    `127.0.0.1:${monitoring.addr.port}`,
  ];
  const net = { extra: ["--allow-net=127.0.0.1"] };
  try {
    const cases: { args: string[]; code: number; out: string; err: RegExp }[] = [
      { args: ["GET", "/debug/syncz"], code: 0, out: "debug GET /debug/syncz \n", err: /^HTTP 200 OK\n$/ },
      {
        args: ["GET", "/metrics?x=1"],
        code: 0,
        out: "monitoring GET /metrics?x=1 \n",
        err: /^HTTP 200 OK\n$/,
      },
      {
        args: ["POST", "/debug/config", "{}"],
        code: 0,
        out: "debug POST /debug/config {}\n",
        err: /^HTTP 200 OK/,
      },
      {
        args: ["GET", "/missing"],
        code: 1,
        out: "no such page\n",
        err: new RegExp(
          `^error: GET http://127\\.0\\.0\\.1:${monitoring.addr.port}/missing: HTTP 404 Not Found\n$`,
        ),
      },
    ];
    for (const c of cases) {
      const r = await meshd(["request", ...c.args, ...addrs], net);
      assert.equal(r.code, c.code, `${c.args.join(" ")}: ${r.err}`);
      assert.equal(r.out, c.out);
      assert.match(r.err, c.err);
    }
    const withVklog = await meshd(["--vklog", "2", "request", "GET", "/debug/syncz", ...addrs], net);
    assert.equal(withVklog.code, 0, withVklog.err);
  } finally {
    await debug.shutdown();
    await monitoring.shutdown();
  }
});

Deno.test("request: bad input and unreachable or forbidden servers are clear errors, exit 1", async () => {
  const free = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (free.addr as Deno.NetAddr).port;
  free.close();
  const net = { extra: ["--allow-net=127.0.0.1"] };
  const cases: { args: string[]; extra?: string[]; err: RegExp }[] = [
    {
      args: ["GET", "/metrics", "--monitoringAddr", `:${port}`],
      extra: net.extra,
      err: /is meshd discovery running\?/,
    },
    {
      args: ["GET", "/metrics"],
      err: /^error: meshd request needs network access: run it with --allow-net=127\.0\.0\.1$/m,
    },
    { args: ["GET", "metrics"], err: /^error: path metrics must begin with \/$/m },
    { args: ["GE T", "/metrics"], err: /^error: "GE T" is not an HTTP method$/m },
    { args: ["GET", "/metrics", "body"], err: /^error: a GET request cannot carry a body$/m },
    { args: ["GET", "/debug/x", "--httpAddr", "8080"], err: /^error: --httpAddr: 8080 is not an address/m },
  ];
  for (const c of cases) {
    const r = await meshd(["request", ...c.args], { extra: c.extra });
    assert.equal(r.code, 1, c.args.join(" "));
    assert.match(r.err, c.err);
  }
});

Deno.test("--vklog: accepted by every command, before or after it; a bad value is an error", async () => {
  for (
    const args of [
      ["--vklog", "3", "version"],
      ["version", "--vklog", "3"],
      ["completion", "bash", "--vklog", "3"],
    ]
  ) {
    const r = await meshd(args);
    assert.equal(r.code, 0, `${args.join(" ")}: ${r.err}`);
  }
  assert.equal((await discovery(["--vklog=3"])).code, 0);
  const bad = await meshd(["version", "--vklog", "x"]);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /^error: --vklog: x is not an integer$/m);
});

Deno.test("completion bash: real bash completes meshd's commands and flags", async () => {
  const r = await meshd(["completion", "bash"]);
  assert.equal(r.code, 0);
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/c.bash`, r.out);
  const run = async (words: string[]) => {
    const probe = `source ${dir}/c.bash; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); ` +
      `COMP_CWORD=${words.length - 1}; __meshd_complete; echo "\${COMPREPLY[*]}"`;
    const out = await new Deno.Command("bash", { args: ["-c", probe] }).output();
    return new TextDecoder().decode(out.stdout).trim();
  };
  assert.equal(await run(["meshd", "dis"]), "discovery");
  assert.equal(await run(["meshd", "completion", "p"]), "powershell");
  assert.equal(await run(["meshd", "discovery", "--ctrlz"]), "--ctrlz_address --ctrlz_port");
  assert.equal(await run(["meshd", "version", "--vk"]), "--vklog");
  await Deno.remove(dir, { recursive: true });
});

for (const shell of ["zsh", "fish"]) {
  Deno.test(requires(commandMissing(shell), {
    name: `completion ${shell}: the script parses in real ${shell}`,
    fn: async () => {
      const r = await meshd(["completion", shell]);
      const dir = await Deno.makeTempDir();
      await Deno.writeTextFile(`${dir}/c`, r.out);
      const check = await new Deno.Command(shell, { args: ["-n", `${dir}/c`] }).output();
      assert.ok(check.success, new TextDecoder().decode(check.stderr));
      await Deno.remove(dir, { recursive: true });
    },
  }));
}

Deno.test("completion: powershell, and --no-descriptions", async () => {
  const ps = await meshd(["completion", "powershell"]);
  assert.match(ps.out, /Register-ArgumentCompleter -Native -CommandName 'meshd'/);
  const withD = await meshd(["completion", "fish"]);
  const without = await meshd(["completion", "fish", "--no-descriptions"]);
  assert.match(withD.out, /-a 'discovery' -d 'Start the proxy discovery service/);
  assert.doesNotMatch(without.out, / -d '/);
});

Deno.test("token: mints a bootstrap token from ROOT_CA_DIR's key that meshd's CA accepts; never creates the key", async () => {
  const dir = await Deno.makeTempDir();
  const vars = { ROOT_CA_DIR: `${dir}/ca` };
  const none = await meshd(["token", "-n", "foo", "--serviceAccount", "sleep"], { vars });
  assert.equal(none.code, 1);
  assert.match(none.err, /^error: ROOT_CA_DIR .*\/ca: /m);
  const { CertificateAuthority } = await import("./ca/mod.ts");
  const ca = new CertificateAuthority();
  await ca.start({
    rootCaDir: `${dir}/ca`,
    trustDomain: "cluster.local",
    selfSignedRsaKeySize: 2048,
    selfSignedTtlMs: 3600_000,
    defaultTtlMs: 3600_000,
    maxTtlMs: 7200_000,
    tokenAudiences: "mesh-ca",
  });
  try {
    const r = await meshd(["token", "-n", "foo", "--serviceAccount", "sleep", "--duration", "10m"], { vars });
    assert.equal(r.code, 0, r.err);
    const who = await ca.authenticate({ authorization: `Bearer ${r.out.trim()}` });
    assert.equal(JSON.stringify(who).includes('"serviceAccount":"sleep"'), true, JSON.stringify(who));
    const json = await meshd(["token", "-n", "foo", "-o", "json", "--duration", "1h"], { vars });
    assert.equal(JSON.parse(json.out).serviceAccount, "default");
    const bad = await meshd(["token", "-n", "foo", "--duration", "48h"], { vars });
    assert.equal(bad.code, 1);
    assert.match(bad.err, /token duration must be 1 to 86400 seconds/);
  } finally {
    await ca.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("discovery: the secure port offers only AEAD suites, whatever --tls-cipher-suites says (real openssl)", async () => {
  const handshake = async (port: string, cipher: string) => {
    const r = await new Deno.Command("openssl", {
      args: ["s_client", "-connect", `127.0.0.1:${port}`, "-tls1_2", "-cipher", cipher],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    return new TextDecoder().decode(r.stdout);
  };
  const r = await discovery(["--tls-cipher-suites", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"], {
    whileReady: async (out) => {
      const port = /mutual TLS on [^ ]+ \(port (\d+)\)/.exec(out)![1];
      assert.match(
        await handshake(port, "ECDHE-ECDSA-AES256-GCM-SHA384"),
        /Cipher is ECDHE-ECDSA-AES256-GCM-SHA384/,
      );
      assert.doesNotMatch(
        await handshake(port, "ECDHE-ECDSA-AES128-SHA"),
        /Cipher is ECDHE/,
        "CBC is never offered",
      );
    },
  });
  assert.equal(r.code, 0, r.err);
  assert.match(
    r.err,
    /^warning: --tls-cipher-suites has no effect yet: Deno's TLS stack chooses the suites/m,
  );
});
