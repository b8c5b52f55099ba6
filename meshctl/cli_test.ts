import assert from "node:assert/strict";
import { MAX_CONFIG_BYTES } from "../shared/mod.ts";
import { meshctl, ROOT } from "./test_support.ts";
import { commandMissing, requires } from "../shared/internal/testing/prerequisites.ts";

Deno.test("validate: the YAML of Istio's four security tasks and its ingress SNI passthrough task is valid", async () => {
  const r = await meshctl(["validate", "-f", "tests/fixtures/istio"]);
  assert.equal(r.code, 0, r.out + r.err);
  assert.match(r.out, /^valid: 20 resources valid in 19 files, 0 errors, 4 warnings$/m);
  assert.doesNotMatch(r.out, /^error:/m);
});

Deno.test("validate: Istio's Gateway API variants (targetRef) are rejected with a clear reason; exit 1", async () => {
  const r = await meshctl(["validate", "-f", "tests/fixtures/unsupported/istio-authn-policy-gateway-api"]);
  assert.equal(r.code, 1, r.out + r.err);
  const errors = r.out.split("\n").filter((l) => l.startsWith("error: "));
  assert.ok(errors.length >= 3, r.out);
  for (const e of errors) assert.match(e, /spec\.targetRefs?: /);
});

Deno.test("validate: one line per error, each naming file, document, line and field; exit 1", async () => {
  const r = await meshctl(["validate", "-f", "tests/fixtures/invalid/mixed_errors.yaml"]);
  assert.equal(r.code, 1);
  const errors = r.out.split("\n").filter((l) => l.startsWith("error: "));
  const f = "tests/fixtures/invalid/mixed_errors.yaml";
  const expected = [
    `${f}:9: document 1: PeerAuthentication foo/default: spec.mtls.mode: must be one of`,
    `${f}:10: document 1: PeerAuthentication foo/default: spec.portLevelMtls: mesh-wide and namespace-wide`,
    `${f}:24: document 2: RequestAuthentication foo/jwt-example: spec.jwtRules[0].issuer: required field is missing`,
    `${f}:25: document 2: RequestAuthentication foo/jwt-example: spec.jwtRules[0].jwks: jwks and jwksUri exclude`,
    `${f}:24: document 2: RequestAuthentication foo/jwt-example: spec.jwtRules[0].jwksUri: URI scheme "ftp"`,
    `${f}:36: document 3: AuthorizationPolicy foo/deny: spec.rules[0].from[0].source: serviceAccounts cannot be`,
    `${f}:41: document 3: AuthorizationPolicy foo/deny: spec.rules[0].to[0].operation.paths[0]: invalid path`,
    `${f}:43: document 3: AuthorizationPolicy foo/deny: spec.rules[0].when[0].key: unknown condition key`,
    `${f}:45: document 3: AuthorizationPolicy foo/deny: spec.rules[0].when[1]: a condition needs values or notValues`,
  ];
  assert.equal(errors.length, expected.length, r.out);
  for (const e of expected) {
    assert.ok(errors.some((l) => l.startsWith(`error: ${e}`)), `missing: ${e}\n${r.out}`);
  }
  assert.match(r.out, /^invalid: 0 resources valid in 1 files, 9 errors, 1 warnings$/m);
});

Deno.test("validate: reads standard input with -f -", async () => {
  const yaml = await Deno.readTextFile(
    `${ROOT}tests/fixtures/istio/authz-jwt/02_authorization_policy_require_jwt.yaml`,
  );
  assert.equal((await meshctl(["validate", "-f", "-"], { stdin: yaml })).code, 0);
  const bad = await meshctl(["validate", "-f", "-"], { stdin: yaml.replace("ALLOW", "PERMIT") });
  assert.equal(bad.code, 1);
  assert.match(
    bad.out,
    /^error: -:\d+: document 1: AuthorizationPolicy foo\/require-jwt: spec.action: must be one of/m,
  );
});

Deno.test("validate: -f takes comma-separated lists and repeats", async () => {
  const a = "tests/fixtures/istio/mtls-migration/01_peer_authentication_strict_foo.yaml";
  const b = "tests/fixtures/istio/authz-deny";
  const r = await meshctl(["validate", "-f", `${a},${b}`, "-f", a]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /in 5 files/);
});

Deno.test("validate: -n gives a namespace to documents that have none", async () => {
  const f = "tests/fixtures/istio/mtls-migration/01_peer_authentication_strict_foo.yaml";
  const yaml = (await Deno.readTextFile(`${ROOT}${f}`)).replace("STRICT", "BOGUS");
  const r = await meshctl(["validate", "-n", "foo", "-f", "-"], { stdin: yaml });
  assert.match(r.out, /PeerAuthentication foo\/default/);
});

const badFiles: { name: string; content: Uint8Array | string | null; message: RegExp }[] = [
  { name: "empty file", content: "", message: /: empty file: no YAML documents/ },
  {
    name: "binary data",
    content: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe, 0x00, 0x01]),
    message: /binary data/,
  },
  { name: "invalid YAML", content: "kind: [\n", message: /invalid YAML/ },
  { name: "missing file", content: null, message: /cannot read: no such file or directory/ },
];
for (const c of badFiles) {
  Deno.test(`validate: bad input is an error line, not a crash: ${c.name}`, async () => {
    const dir = await Deno.makeTempDir();
    const file = `${dir}/input.yaml`;
    if (typeof c.content === "string") await Deno.writeTextFile(file, c.content);
    else if (c.content) await Deno.writeFile(file, c.content);
    const r = await meshctl(["validate", "-f", file]);
    assert.equal(r.code, 1, r.out + r.err);
    assert.equal(r.err, "");
    assert.match(r.out, new RegExp(`^error: ${file}`, "m"));
    assert.match(r.out, c.message);
    await Deno.remove(dir, { recursive: true });
  });
}

Deno.test("validate: a 50 MB file is refused by size without being read", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/big.yaml`;
  const f = await Deno.open(file, { write: true, create: true });
  await f.truncate(50 * 1024 * 1024);
  f.close();
  const r = await meshctl(["validate", "-f", file]);
  assert.equal(r.code, 1);
  assert.match(
    r.out,
    new RegExp(`^error: ${file}: file is 50.0 MiB; the limit is ${MAX_CONFIG_BYTES / 1048576} MiB$`, "m"),
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("validate: without -f is a usage error", async () => {
  const r = await meshctl(["validate"]);
  assert.equal(r.code, 1);
  assert.match(r.err, /validate needs -f/);
});

Deno.test("unknown command and unknown flag exit 2 with help", async () => {
  assert.equal((await meshctl(["frobnicate"])).code, 2);
  const r = await meshctl(["validate", "--bogus"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /unknown option '--bogus'/);
});

const versions: { args: string[]; check: (out: string) => void }[] = [
  { args: ["version", "--remote=false"], check: (o) => assert.match(o, /^client version: \d+\.\d+\.\d+\n$/) },
  {
    args: ["version", "--remote=false", "--short=false"],
    check: (o) => assert.match(o, /^version: .*\ndeno: 2\.9\./m),
  },
  {
    args: ["version", "--remote=false", "-o", "json"],
    check: (o) => assert.match(JSON.parse(o).clientVersion.version, /^\d+\.\d+/),
  },
  {
    args: ["version", "--remote=false", "-o", "yaml"],
    check: (o) => assert.match(o, /^clientVersion:\n {2}version: /),
  },
];
for (const v of versions) {
  Deno.test(`version: ${v.args.join(" ")}`, async () => {
    const r = await meshctl(v.args);
    assert.equal(r.code, 0, r.err);
    v.check(r.out);
  });
}

Deno.test("version: meshd unreachable is a warning; the client version is still printed", async () => {
  const r = await meshctl(["version", "--debug-address", "127.0.0.1:1"]);
  assert.equal(r.code, 0);
  assert.match(r.out, /^client version: \d+\.\d+\.\d+\n$/);
  assert.match(r.err, /^warning: control plane version unavailable: cannot reach meshd's debug interface/);
});

Deno.test("completion bash: real bash loads it and completes commands, aliases and flags", async () => {
  const r = await meshctl(["completion", "bash"]);
  assert.equal(r.code, 0);
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/c.bash`, r.out);
  const probe = (words: string[]) =>
    `source ${dir}/c.bash; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); ` +
    `COMP_CWORD=${words.length - 1}; __meshctl_complete; echo "\${COMPREPLY[*]}"`;
  const run = async (words: string[]) =>
    new TextDecoder().decode((await new Deno.Command("bash", { args: ["-c", probe(words)] }).output()).stdout)
      .trim();
  assert.equal(await run(["meshctl", "va"]), "validate");
  assert.equal(await run(["meshctl", "completion", "z"]), "zsh");
  assert.match(await run(["meshctl", "validate", "--fi"]), /^--filename$/);
  assert.match(await run(["meshctl", "v", "--fi"]), /^--filename$/, "alias v resolves to validate");
  assert.match(
    await run(["meshctl", "validate", "--meshN"]),
    /^--meshNamespace$/,
    "global flags after a command",
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test(requires(commandMissing("fish"), {
  name: "completion fish: real fish completes commands and flags",
  fn: async () => {
    const r = await meshctl(["completion", "fish"]);
    const dir = await Deno.makeTempDir();
    await Deno.writeTextFile(`${dir}/c.fish`, r.out);
    const complete = async (line: string) =>
      new TextDecoder().decode(
        (await new Deno.Command("fish", { args: ["-c", `source ${dir}/c.fish; complete -C '${line}'`] })
          .output())
          .stdout,
      );
    assert.match(await complete("meshctl va"), /^validate\tValidate mesh policy/m);
    assert.match(await complete("meshctl validate --file"), /^--filename\t/m);
    await Deno.remove(dir, { recursive: true });
  },
}));

for (const shell of ["zsh", "fish"]) {
  Deno.test(requires(commandMissing(shell), {
    name: `completion ${shell}: the script parses in real ${shell}`,
    fn: async () => {
      const r = await meshctl(["completion", shell]);
      const dir = await Deno.makeTempDir();
      await Deno.writeTextFile(`${dir}/c`, r.out);
      const check = await new Deno.Command(shell, { args: ["-n", `${dir}/c`] }).output();
      assert.ok(check.success, new TextDecoder().decode(check.stderr));
      await Deno.remove(dir, { recursive: true });
    },
  }));
}

Deno.test("completion: --no-descriptions drops descriptions (fish and powershell)", async () => {
  const withD = await meshctl(["completion", "fish"]);
  const without = await meshctl(["completion", "fish", "--no-descriptions"]);
  assert.match(withD.out, /-a 'validate' -d 'Validate mesh policy/);
  assert.doesNotMatch(without.out, / -d '/);
  const ps = await meshctl(["completion", "powershell"]);
  assert.match(ps.out, /Register-ArgumentCompleter -Native -CommandName 'meshctl'/);
  assert.match(ps.out, /'validate' = @\(.*@\('--filename', 'files or directories/);
});

Deno.test("options: the global options with their defaults", async () => {
  const r = await meshctl(["options"]);
  assert.equal(r.code, 0);
  assert.match(r.out, /^The following options can be passed to any command:\n\n/);
  assert.match(
    r.out,
    /-i, --meshNamespace <namespace> +mesh system namespace, also the root namespace \(default "mesh-system"\)/,
  );
});

Deno.test("options: the common flags without effect are marked, and each warns once when given", async () => {
  const r = await meshctl(["options"]);
  const line = r.out.split("\n").find((l) => l.includes("--vklog <level>"))!;
  assert.match(line, /\(no effect yet: [^)]+\)/);
  for (
    const flag of ["--as <user>", "--as-group <group>", "--as-uid <uid>", "--context <name>", "--orchconfig"]
  ) {
    const line = r.out.split("\n").find((l) => l.includes(flag))!;
    assert.doesNotMatch(line, /no effect/, `${flag} takes effect (issue 15)`);
  }
  const given = await meshctl(["--vklog", "3", "--context", "c", "options"]);
  assert.equal(given.code, 0);
  assert.deepEqual(given.err.trimEnd().split("\n"), [
    "warning: --vklog has no effect: meshctl writes no leveled logs",
  ]);
  assert.equal((await meshctl(["options"])).err, "", "nothing given, nothing warned");
});

Deno.test("completion: the new commands are completed", async () => {
  const r = await meshctl(["completion", "bash"]);
  for (const c of ["analyze", "proxy-config", "proxy-status", "experimental", "admin", "options"]) {
    assert.ok(r.out.includes(c), c);
  }
});
