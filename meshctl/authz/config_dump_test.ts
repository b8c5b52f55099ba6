/**
 * Reading the policies a proxy enforces from its config dump: the mesh section's workload,
 * authorizations (merged by shared's mergeByAction) and JWT rules; errors name the file and the
 * field path. A dump of a real lab proxy is covered by meshctl/lab_test.ts.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DUMP_TYPES } from "../../shared/internal/config_dump/types.ts";
import { jwtRulesText, policiesFromDump, readConfigDumpFile } from "./config_dump.ts";

const mesh = (extra: Record<string, unknown>) => ({
  configs: [{
    "@type": DUMP_TYPES.mesh,
    workload: { name: "web-1", namespace: "foo", labels: { app: "web" } },
    authorizations: {
      resources: {
        "foo/b-allow": {
          name: "b-allow",
          namespace: "foo",
          action: "ALLOW",
          scope: "NAMESPACE",
          rules: [{}],
        },
        "foo/a-deny": {
          name: "a-deny",
          namespace: "foo",
          action: "DENY",
          scope: "WORKLOAD_SELECTOR",
          rules: [],
        },
      },
    },
    jwt_policies: {
      resources: {
        "foo/jwt": {
          name: "jwt",
          namespace: "foo",
          providers: [{ issuer: "https://i", audiences: ["x"], jwks: "", jwksUri: "https://i/keys" }],
        },
      },
    },
    ...extra,
  }],
});

Deno.test("policiesFromDump: workload, policies merged by action in name order, JWT rules", () => {
  const p = policiesFromDump(mesh({}), "d.json");
  assert.deepEqual(p.workload, { name: "web-1", namespace: "foo", labels: { app: "web" } });
  assert.deepEqual(p.merged.all.map((x) => x.name), ["a-deny", "b-allow"]);
  assert.deepEqual(p.merged.deny.map((x) => x.name), ["a-deny"]);
  assert.deepEqual(p.merged.allow.map((x) => x.name), ["b-allow"]);
  assert.equal(
    jwtRulesText(p.jwtRules),
    "RequestAuthentication foo/jwt: issuer https://i, audiences [x], jwksUri https://i/keys (no keys yet)\n",
  );
  assert.equal(jwtRulesText([]), "RequestAuthentication: none\n");
});

Deno.test("policiesFromDump: errors name the file and the field path", () => {
  assert.throws(
    () => policiesFromDump({ configs: [] }, "d.json"),
    /^Error: d\.json: configs: no type\.googleapis\.com\/mesh\.admin\.v1\.MeshConfigDump section/,
  );
  assert.throws(() => policiesFromDump(mesh({ workload: null }), "d.json"), /d\.json: mesh\.workload: empty/);
  assert.throws(
    () =>
      policiesFromDump(
        mesh({ authorizations: { resources: { "foo/x": { name: "x", namespace: "foo", rules: 3 } } } }),
        "d.json",
      ),
    /d\.json: mesh\.authorizations\.resources\["foo\/x"\]\.rules: not a list/,
  );
  assert.throws(
    () => policiesFromDump(mesh({ jwt_policies: { resources: [] } }), "d.json"),
    /d\.json: mesh\.jwt_policies\.resources: not an object/,
  );
  const rule = (r: unknown) => ({
    authorizations: { resources: { "foo/x": { name: "x", namespace: "foo", rules: [r] } } },
  });
  const at = /d\.json: mesh\.authorizations\.resources\["foo\/x"\]\.rules\[0\]/.source;
  const cases: [unknown, string][] = [
    [3, `${at}: not an object`],
    [{ from: [{ source: { principals: "a" } }] }, `${at}\\.from\\[0\\]\\.source\\.principals: not a list`],
    [{ to: [{ operation: { paths: [1] } }] }, `${at}\\.to\\[0\\]\\.operation\\.paths\\[0\\]: not a string`],
    [{ when: [{ values: ["v"] }] }, `${at}\\.when\\[0\\]\\.key: required field is missing`],
  ];
  for (const [r, want] of cases) {
    assert.throws(() => policiesFromDump(mesh(rule(r)), "d.json"), new RegExp(want), JSON.stringify(r));
  }
  assert.throws(
    () =>
      policiesFromDump(
        mesh({ authorizations: { resources: { "foo/x": { name: "x", namespace: "foo", scope: "X" } } } }),
        "d.json",
      ),
    /d\.json: mesh\.authorizations\.resources\["foo\/x"\]\.scope: "X" is not one of GLOBAL, NAMESPACE, WORKLOAD_SELECTOR/,
  );
  assert.throws(
    () => policiesFromDump(mesh({ workload: { name: "w", namespace: "foo", labels: { app: 1 } } }), "d.json"),
    /d\.json: mesh\.workload\.labels\["app"\]: not a string/,
  );
});

Deno.test("policiesFromDump: rules keep the fields the proxy dumped, absent and null included", () => {
  const rules = [
    {
      from: [{ source: { principals: ["a"], notPrincipals: [] } }],
      to: [],
      when: [{ key: "k", values: ["v"] }],
    },
    { from: null, to: [{ operation: null }] },
  ];
  const p = policiesFromDump(
    mesh({ authorizations: { resources: { "foo/x": { name: "x", namespace: "foo", rules } } } }),
    "d.json",
  );
  assert.deepEqual(p.merged.all[0].rules, rules);
});

Deno.test("readConfigDumpFile: a dump; undefined for YAML and other JSON; a missing file named", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "d.json"), JSON.stringify(mesh({})));
    await Deno.writeTextFile(join(dir, "p.yaml"), "kind: AuthorizationPolicy\n");
    await Deno.writeTextFile(join(dir, "o.json"), '{"kind": "AuthorizationPolicy"}');
    assert.equal((await readConfigDumpFile(join(dir, "d.json")))?.configs.length, 1);
    assert.equal(await readConfigDumpFile(join(dir, "p.yaml")), undefined);
    assert.equal(await readConfigDumpFile(join(dir, "o.json")), undefined);
    assert.equal(await readConfigDumpFile(dir), undefined);
    await assert.rejects(readConfigDumpFile(join(dir, "none.json")), /none\.json: no such file/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
