import assert from "node:assert/strict";
import { SignJWT } from "jose";
import { meshctl, ROOT } from "../test_support.ts";
import { EXIT_DENIED } from "./command.ts";

const DENY = "tests/fixtures/istio/authz-deny";
const JWT = "tests/fixtures/istio/authz-jwt";
const GET_DENY = `${DENY}/01_authorization_policy_deny_method_get.yaml`;
const GET_DENY_UNLESS_ADMIN = `${DENY}/02_authorization_policy_deny_method_get_unless_x_token_admin.yaml`;
const ALLOW_IP = `${DENY}/03_authorization_policy_allow_path_ip.yaml`;
const WORKLOAD = ["-n", "foo", "-l", "app=httpbin"];

Deno.test("authz check: merged policies of a workload from Istio's authz-deny task files", async () => {
  const r = await meshctl(["x", "authz", "check", "-f", GET_DENY_UNLESS_ADMIN, "-f", ALLOW_IP, ...WORKLOAD]);
  assert.equal(r.code, 0, r.err);
  assert.match(
    r.out,
    /^Checked workload namespace foo \(labels app=httpbin\): 2 AuthorizationPolicies apply$/m,
  );
  assert.match(r.out, /^ALLOW {3,}WORKLOAD_SELECTOR {3,}allow-path-ip\.foo {3,}1$/m);
  assert.match(r.out, /^DENY {3,}WORKLOAD_SELECTOR {3,}deny-method-get\.foo {3,}1$/m);
  assert.match(
    r.out,
    /^deny-method-get\.foo rule 0: to: methods=\[GET\]; when: request\.headers\[x-token\] notValues=\[admin\]$/m,
  );
  const other = await meshctl(["x", "authz", "check", "-f", DENY, "-n", "foo", "-l", "app=other"]);
  assert.match(other.out, /: 0 AuthorizationPolicies apply/);
  const json = await meshctl(["x", "authz", "check", "-f", ALLOW_IP, ...WORKLOAD, "-o", "json"]);
  const v = JSON.parse(json.out) as { policies: { name: string; action: string; scope: string }[] };
  assert.deepEqual(v.policies.map((p) => [p.name, p.action, p.scope]), [[
    "allow-path-ip",
    "ALLOW",
    "WORKLOAD_SELECTOR",
  ]]);
});

Deno.test("authz explain: Istio's authz-deny task, allow exits 0, deny exits 3", async () => {
  const cases: { files: string[]; args: string[]; code: number; first: RegExp }[] = [
    {
      files: [GET_DENY],
      args: ["--method", "GET", "--path", "/get"],
      code: EXIT_DENIED,
      first: /^DENY: denied by DENY policy foo\/deny-method-get rule 0$/,
    },
    {
      files: [GET_DENY],
      args: ["--method", "POST", "--path", "/post"],
      code: 0,
      first: /^ALLOW: allowed: no ALLOW policy applies$/,
    },
    {
      files: [GET_DENY_UNLESS_ADMIN],
      args: ["-H", "x-token=admin"],
      code: 0,
      first: /^ALLOW: allowed: no ALLOW policy applies$/,
    },
    {
      files: [GET_DENY_UNLESS_ADMIN],
      args: ["-H", "x-token=guest"],
      code: EXIT_DENIED,
      first: /^DENY: denied by DENY policy/,
    },
    {
      files: [GET_DENY_UNLESS_ADMIN, ALLOW_IP],
      args: ["--path", "/ip", "-H", "x-token=admin"],
      code: 0,
      first: /^ALLOW: allowed by ALLOW policy foo\/allow-path-ip rule 0$/,
    },
    {
      files: [GET_DENY_UNLESS_ADMIN, ALLOW_IP],
      args: ["--path", "/headers", "-H", "x-token=admin"],
      code: EXIT_DENIED,
      first: /^DENY: denied: no rule of ALLOW policies foo\/allow-path-ip matched$/,
    },
  ];
  for (const c of cases) {
    const r = await meshctl([
      "x",
      "authz",
      "explain",
      ...c.files.flatMap((f) => ["-f", f]),
      ...WORKLOAD,
      ...c.args,
    ]);
    assert.equal(r.code, c.code, `${c.args.join(" ")}: ${r.out}${r.err}`);
    assert.match(r.out.split("\n")[0], c.first, r.out);
  }
});

Deno.test("authz explain: Istio's authz-jwt task with a JWT file, a claims JSON and -o yaml", async () => {
  const token = await new SignJWT({ groups: ["group1", "group2"] }).setProtectedHeader({ alg: "HS256" })
    .setIssuer("testing@secure.istio.io").setSubject("testing@secure.istio.io")
    .sign(new TextEncoder().encode("a secret of thirty-two bytes....."));
  const file = await Deno.makeTempFile();
  try {
    await Deno.writeTextFile(file, token);
    const policy = `${JWT}/03_authorization_policy_require_jwt_groups_claim.yaml`;
    const ok = await meshctl(["x", "authz", "explain", "-f", policy, ...WORKLOAD, "--jwt", file]);
    assert.equal(ok.code, 0, ok.out + ok.err);
    assert.match(ok.out, /^ALLOW: allowed by ALLOW policy foo\/require-jwt rule 0$/m);
    assert.match(
      ok.out,
      /^rule 0: from: requestPrincipals=\[testing@secure\.istio\.io\/testing@secure\.istio\.io\]; when: request\.auth\.claims\[groups\] values=\[group1\]$/m,
    );
    assert.match(ok.out, /^note: the JWT is decoded, not verified/m);
    const claims = JSON.stringify({
      iss: "testing@secure.istio.io",
      sub: "testing@secure.istio.io",
      groups: ["group3"],
    });
    const no = await meshctl([
      "x",
      "authz",
      "explain",
      "-f",
      policy,
      ...WORKLOAD,
      "--jwt",
      claims,
      "-o",
      "yaml",
    ]);
    assert.equal(no.code, EXIT_DENIED, no.out + no.err);
    assert.match(no.out, /^ {2}allowed: false$/m);
    assert.match(no.out, /^ {2}reason: "denied: no rule of ALLOW policies foo\/require-jwt matched"$/m);
    const none = await meshctl(["x", "authz", "explain", "-f", policy, ...WORKLOAD]);
    assert.equal(none.code, EXIT_DENIED);
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("authz: the workload from a WorkloadEntry in the files; bad input names file and field", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/we.yaml`,
      "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata:\n  name: vm1\n  namespace: foo\n" +
        "spec:\n  address: 10.0.0.5\n  labels:\n    app: httpbin\n",
    );
    const r = await meshctl([
      "x",
      "authz",
      "explain",
      "workloadentry/vm1.foo",
      "-f",
      `${dir}/we.yaml`,
      "-f",
      `${ROOT}${GET_DENY}`,
    ]);
    assert.equal(r.code, EXIT_DENIED, r.out + r.err);
    assert.match(
      r.out,
      /^workload vm1\.foo \(labels app=httpbin\); policies applied: deny-method-get\.foo$/m,
    );
    const missing = await meshctl(["x", "authz", "check", "vm2.foo", "-f", `${dir}/we.yaml`]);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /workload vm2\.foo not found in .*we\.yaml \(known: vm1\.foo\)/);
    await Deno.writeTextFile(
      `${dir}/bad.yaml`,
      (await Deno.readTextFile(`${ROOT}${GET_DENY}`)).replace("DENY", "BLOCK"),
    );
    const bad = await meshctl(["x", "authz", "check", "-f", `${dir}/bad.yaml`, ...WORKLOAD]);
    assert.equal(bad.code, 1);
    assert.match(
      bad.err,
      /bad\.yaml:\d+: AuthorizationPolicy foo\/deny-method-get spec\.action: must be one of/,
    );
    const port = await meshctl([
      "x",
      "authz",
      "explain",
      "-f",
      `${ROOT}${GET_DENY}`,
      ...WORKLOAD,
      "--port",
      "x",
    ]);
    assert.equal(port.code, 1);
    assert.match(port.err, /--port: "x" is not a port number/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("authz explain -f <config dump>: the proxy's path normalization decides //headers, /%2Fheaders, /a/../headers", async () => {
  const dir = await Deno.makeTempDir();
  const dumpWith = (option: string | undefined) => ({
    configs: [
      {
        "@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
        dynamic_listeners: [{
          name: "inbound|10.1.0.2_8000",
          active_state: {
            listener: {
              name: "inbound|10.1.0.2_8000",
              address: { socket_address: { address: "10.1.0.2", port_value: 8000 } },
              traffic_direction: "INBOUND",
              ...(option ? { http_connection_manager: { path_normalization: option } } : {}),
            },
          },
        }],
      },
      {
        "@type": "type.googleapis.com/mesh.admin.v1.MeshConfigDump",
        workload: { name: "httpbin-1", namespace: "foo", labels: { app: "httpbin" } },
        authorizations: {
          resources: {
            "foo/deny-headers": {
              name: "deny-headers",
              namespace: "foo",
              action: "DENY",
              scope: "WORKLOAD_SELECTOR",
              rules: [{ to: [{ operation: { paths: ["/headers"] } }] }],
            },
          },
        },
      },
    ],
  });
  // deno-fmt-ignore
  const cases: { option?: string; path: string; code: number; line: RegExp }[] = [
    { option: "NONE", path: "//headers", code: 0, line: /^path normalization: NONE \(from the config dump's listener inbound\|10\.1\.0\.2_8000\); path matched as \/\/headers$/m },
    { option: "BASE", path: "//headers", code: 0, line: /^path normalization: BASE \(from .*\); path matched as \/\/headers$/m },
    { option: "BASE", path: "/a/../headers", code: EXIT_DENIED, line: /^path normalization: BASE .*path matched as \/headers$/m },
    { option: "MERGE_SLASHES", path: "//headers", code: EXIT_DENIED, line: /MERGE_SLASHES .*as \/headers$/m },
    { option: "MERGE_SLASHES", path: "/%2Fheaders", code: 0, line: /MERGE_SLASHES .*as \/%2Fheaders$/m },
    { option: "DECODE_AND_MERGE_SLASHES", path: "/%2Fheaders", code: EXIT_DENIED, line: /^path normalization: DECODE_AND_MERGE_SLASHES \(from /m },
    { path: "//headers", code: EXIT_DENIED, line: /^path normalization: DECODE_AND_MERGE_SLASHES \(default: the config dump's listeners show no path_normalization\); path matched as \/headers$/m },
  ];
  try {
    for (const c of cases) {
      const file = `${dir}/${c.option ?? "none"}.json`;
      await Deno.writeTextFile(file, JSON.stringify(dumpWith(c.option)));
      const r = await meshctl(["x", "authz", "explain", "-f", file, "--port", "8000", "--path", c.path]);
      assert.equal(r.code, c.code, `${c.option} ${c.path}: ${r.out}${r.err}`);
      assert.match(r.out, c.line);
      if (c.code === EXIT_DENIED) {
        assert.match(r.out, /^DENY: denied by DENY policy foo\/deny-headers rule 0$/m);
      }
    }
    const base = `${dir}/BASE.json`;
    const json = await meshctl(["x", "authz", "explain", "-f", base, "--path", "//headers", "-o", "json"]);
    assert.deepEqual(JSON.parse(json.out).pathNormalization, {
      option: "BASE",
      from: "the config dump's listener inbound|10.1.0.2_8000",
      path: "//headers",
    });
    const chosen = await meshctl([
      "x",
      "authz",
      "explain",
      "-f",
      base,
      "--path",
      "//headers",
      "--path-normalization",
      "MERGE_SLASHES",
    ]);
    assert.equal(chosen.code, EXIT_DENIED, chosen.out + chosen.err);
    assert.match(chosen.out, /^path normalization: MERGE_SLASHES \(from --path-normalization\)/m);
    const check = await meshctl(["x", "authz", "check", "-f", base]);
    assert.match(check.out, /^path normalization: BASE \(from the config dump's listener inbound/m);
    await Deno.writeTextFile(`${dir}/bad.json`, JSON.stringify(dumpWith("SLASHES")));
    const bad = await meshctl(["x", "authz", "explain", "-f", `${dir}/bad.json`]);
    assert.equal(bad.code, 1);
    assert.match(
      bad.err,
      /bad\.json: listeners: dynamic_listeners\[0\]\..*path_normalization: "SLASHES" is not one of/,
    );
    const files = await meshctl(["x", "authz", "explain", "-f", GET_DENY, ...WORKLOAD, "--path", "//get"]);
    assert.match(
      files.out,
      /^path normalization: DECODE_AND_MERGE_SLASHES \(default: policy files carry no mesh config\); path matched as \/get$/m,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
