import assert from "node:assert/strict";
import { discovery, flat, meshd } from "./cli_test_support.ts";
import { commandMissing, requires } from "../shared/internal/testing/prerequisites.ts";
import { freePort } from "../shared/internal/testing/free_port.ts";

Deno.test("root: the command tree, PARTIAL, --vklog", async () => {
  const r = await meshd(["--help"]);
  assert.equal(r.code, 0);
  for (const c of ["discovery", "request", "version", "completion"]) {
    assert.match(r.out, new RegExp(`^  ${c} `, "m"));
  }
  assert.match(flat(r.out), /PARTIAL/);
  assert.match(r.out, /--vklog <Level>/);
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
  const port = freePort();
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
  const warned = await meshd(["version", "--vklog", "3"]);
  assert.equal(warned.err, "warning: --vklog has no effect yet: nothing logs through klog\n");
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
