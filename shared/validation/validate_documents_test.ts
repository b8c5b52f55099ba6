import assert from "node:assert/strict";
import { b64, makeTestCa } from "../credentials/_test_support.ts";
import { formatIssue, MAX_CONFIG_BYTES, validateText } from "./validate_documents.ts";

const PA = `apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata:
  name: default
  namespace: foo
spec:
  mtls:
    mode: STRICT
`;

Deno.test("a valid document yields its resource and no issue", () => {
  const r = validateText(PA, "pa.yaml");
  assert.equal(r.issues.length, 0);
  assert.equal(r.resources.length, 1);
  assert.deepEqual(r.resources[0].source, { file: "pa.yaml", documentIndex: 0, line: 1 });
});

Deno.test("Istio's API groups are aliases: security.istio.io v1 and v1beta1", () => {
  for (const v of ["security.istio.io/v1", "security.istio.io/v1beta1"]) {
    const r = validateText(PA.replace("security.mesh.io/v1", v), "pa.yaml");
    assert.equal(r.issues.length, 0, v);
  }
});

Deno.test("every error of a document is reported, each with file, document, line and field", () => {
  const text = `${PA}---
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata:
  name: bad
  namespace: foo
spec:
  mtls:
    mode: STRIKT
  portLevelMtls:
    "8080":
      mode: DISABLE
  selektor: {}
`;
  const r = validateText(text, "two.yaml");
  assert.equal(r.resources.length, 1, "the valid first document is kept");
  const lines = r.issues.map(formatIssue);
  assert.deepEqual(lines, [
    'error: two.yaml:21: document 2: PeerAuthentication foo/bad: spec.selektor: unknown field "selektor"',
    "error: two.yaml:17: document 2: PeerAuthentication foo/bad: spec.mtls.mode: must be one of UNSET, DISABLE, " +
    'PERMISSIVE, STRICT; got the string "STRIKT"',
    "error: two.yaml:18: document 2: PeerAuthentication foo/bad: spec.portLevelMtls: mesh-wide and namespace-wide " +
    "PeerAuthentication cannot have portLevelMtls; add selector.matchLabels",
  ]);
});

const badInputs: { name: string; text: string; line?: number; message: RegExp }[] = [
  { name: "invalid YAML syntax", text: "apiVersion: [unclosed\nkind: x\n", line: 2, message: /invalid YAML/ },
  {
    name: "duplicate key",
    text: `${PA}  mtls: {}\n`,
    line: 9,
    message: /invalid YAML: Map keys must be unique/,
  },
  {
    name: "wrong kind in a mesh group",
    text: PA.replace("kind: PeerAuthentication", "kind: PeerAuthenticaton"),
    line: 2,
    message:
      /kind "PeerAuthenticaton" is not supported in security.mesh.io; supported kinds: PeerAuthentication/,
  },
  {
    name: "an Istio kind this mesh does not support",
    text: "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: x}\nspec: {}\n",
    line: 2,
    message: /kind "DestinationRule" is not supported/,
  },
  {
    name: "a known kind under a foreign apiVersion",
    text: PA.replace("security.mesh.io/v1", "security.mesh.io/v2"),
    line: 1,
    message: /apiVersion "security.mesh.io\/v2" is not one of security.mesh.io\/v1/,
  },
  { name: "unknown field", text: PA + "  extra: 1\n", line: 9, message: /spec.extra: unknown field "extra"/ },
  {
    name: "wrong type",
    text: PA.replace("mode: STRICT", "mode: [STRICT]"),
    line: 8,
    message: /spec.mtls.mode: must be one of .* got a list/,
  },
  {
    name: "missing kind",
    text: "apiVersion: security.mesh.io/v1\nmetadata: {name: x}\n",
    line: 1,
    message: /kind: required/,
  },
  { name: "a list instead of a map", text: "- a\n- b\n", line: 1, message: /a resource must be a map/ },
  { name: "empty file", text: "", message: /empty file/ },
  { name: "only comments", text: "# nothing\n---\n", message: /no YAML documents/ },
  { name: "binary data", text: "\u0000\u0001\u0002PNG", message: /binary data/ },
  {
    name: "alias bomb",
    text:
      'a: &a ["x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n',
    message: /invalid YAML: .*alias/i,
  },
];

for (const c of badInputs) {
  Deno.test(`bad input gives a clear error: ${c.name}`, () => {
    const r = validateText(c.text, "bad.yaml");
    const errors = r.issues.filter((i) => i.severity === "error");
    assert.ok(errors.length >= 1, "expected an error");
    const line = formatIssue(errors[0]);
    assert.match(line, c.message);
    assert.match(line, /^error: bad\.yaml/);
    if (c.line !== undefined) assert.equal(errors[0].line, c.line, line);
    assert.equal(r.resources.length, 0);
  });
}

Deno.test("bad input: a file over the size limit is refused without parsing", () => {
  const text = "#".repeat(MAX_CONFIG_BYTES + 1);
  const r = validateText(text, "huge.yaml");
  assert.match(formatIssue(r.issues[0]), /the limit is 4 MiB/);
});

Deno.test("documents of other API groups are skipped, not errors", () => {
  const text = `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n---\n${PA}`;
  const r = validateText(text, "mixed.yaml");
  assert.equal(r.issues.length, 0);
  assert.equal(r.resources.length, 1);
  assert.equal(r.resources[0].source.documentIndex, 1);
  assert.deepEqual(r.skipped, [{
    documentIndex: 0,
    line: 1,
    reason: "apps/v1 Deployment is not a mesh resource",
  }]);
});

Deno.test("defaultNamespace fills in a missing namespace, as kubectl apply -n", () => {
  const r = validateText(PA.replace("  namespace: foo\n", ""), "pa.yaml", { defaultNamespace: "bar" });
  assert.equal(r.resources[0].resource.metadata.namespace, "bar");
});

Deno.test("JSON input is YAML too", () => {
  const r = validateText(
    JSON.stringify({
      apiVersion: "security.mesh.io/v1",
      kind: "AuthorizationPolicy",
      metadata: { name: "allow-nothing", namespace: "foo" },
      spec: {},
    }),
    "a.json",
  );
  assert.equal(r.issues.length, 0);
});

Deno.test("valid resources are typed by kind: `kind` selects the type of `spec`", async () => {
  const { ca } = await makeTestCa();
  const { resources, issues } = validateText(
    `${PA}---
apiVersion: v1
kind: Secret
metadata: {name: empty, namespace: foo}
type: Opaque
data: {ca.crt: ${b64(ca.certPem)}}
`,
    "x.yaml",
  );
  assert.deepEqual(issues, []);
  const [pa, secret] = resources.map((r) => r.resource);
  assert.equal(pa.kind === "PeerAuthentication" && pa.spec.mtls?.mode, "STRICT");
  assert.equal(secret.kind, "Secret");
});
