import assert from "node:assert/strict";
import { formatIssue, validateText } from "../validation/mod.ts";
import { b64, makeTestCa, tlsSecretYaml } from "./_test_support.ts";
import { parseTlsSecret, redactSecret } from "./secret.ts";

const { ca, leaf } = await makeTestCa();
const httpbin = await leaf("httpbin.example.com");
const other = await leaf("helloworld.example.com");

const secret = (data: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "httpbin-credential", namespace: "mesh-system" },
  type: "kubernetes.io/tls",
  data,
  ...extra,
});

const messages = (
  r: { findings: { path: readonly (string | number)[]; message: string; severity: string }[] },
) => r.findings.map((f) => `${f.severity} ${f.path.join(".")}: ${f.message}`);

Deno.test("kubectl create secret tls output parses to the PEM pair", () => {
  const r = parseTlsSecret(secret({ "tls.crt": b64(httpbin.certPem), "tls.key": b64(httpbin.keyPem) }));
  assert.deepEqual(r.findings, []);
  assert.equal(r.credential?.certChainPem, httpbin.certPem);
  assert.equal(r.credential?.privateKeyPem, httpbin.keyPem);
  assert.equal(r.credential?.caPem, "");
  assert.ok(r.credential!.notAfter > Date.now());
});

Deno.test("Istio's generic cert/key/cacert keys and stringData are read; a -cacert secret holds only a CA", () => {
  const r = parseTlsSecret(
    secret({ cert: b64(httpbin.certPem), key: b64(httpbin.keyPem) }, {
      type: "Opaque",
      stringData: { cacert: ca.certPem },
    }),
  );
  assert.deepEqual(r.findings, []);
  assert.equal(r.credential?.caPem, ca.certPem);
  const caOnly = parseTlsSecret(secret({ "ca.crt": b64(ca.certPem) }, { type: "Opaque" }));
  assert.deepEqual(caOnly.findings, []);
  assert.equal(caOnly.credential?.caPem, ca.certPem);
  assert.equal(caOnly.credential?.certChainPem, "");
});

Deno.test("bad base64, not PEM, a mismatched key and a missing half are errors naming the field", () => {
  assert.deepEqual(messages(parseTlsSecret(secret({ "tls.crt": "%%%", "tls.key": b64(httpbin.keyPem) }))), [
    "error data.tls.crt: not valid base64",
    "error data.tls.crt: required with tls.key",
  ]);
  assert.deepEqual(
    messages(parseTlsSecret(secret({ "tls.crt": b64("hello"), "tls.key": b64(httpbin.keyPem) }))),
    ["error data.tls.crt: not a PEM certificate: no -----BEGIN CERTIFICATE----- block"],
  );
  assert.deepEqual(
    messages(parseTlsSecret(secret({ "tls.crt": b64(httpbin.certPem), "tls.key": b64(other.keyPem) }))),
    ["error data.tls.key: the private key does not match the certificate in tls.crt"],
  );
  assert.deepEqual(messages(parseTlsSecret(secret({ "tls.crt": b64(httpbin.certPem) }))), [
    "error data.tls.key: required with tls.crt",
  ]);
  assert.deepEqual(messages(parseTlsSecret(secret({}))), [
    "error data: a kubernetes.io/tls secret needs tls.crt and tls.key",
  ]);
  assert.deepEqual(messages(parseTlsSecret(secret({}, { type: "kubernetes.io/dockerconfigjson" }))), [
    'error type: secret type "kubernetes.io/dockerconfigjson" is not one of kubernetes.io/tls, Opaque',
  ]);
});

Deno.test("an expired certificate is a warning; the credential is kept", () => {
  const r = parseTlsSecret(secret({ "tls.crt": b64(httpbin.certPem), "tls.key": b64(httpbin.keyPem) }), {
    now: Date.now() + 400 * 86_400_000,
  });
  assert.equal(r.findings.length, 1);
  assert.equal(r.findings[0].severity, "warning");
  assert.match(r.findings[0].message, /^the certificate expired at \d{4}-/);
  assert.ok(r.credential);
});

Deno.test("no message carries key material, and redactSecret blanks keys only", () => {
  const bad = parseTlsSecret(
    secret({ "tls.crt": b64(httpbin.certPem), "tls.key": b64(httpbin.keyPem.slice(0, 200)) }),
  );
  const keyBody = httpbin.keyPem.split("\n")[1];
  for (const f of bad.findings) assert.ok(!f.message.includes(keyBody.slice(0, 20)), f.message);
  const doc = secret({ "tls.crt": "CRT", "tls.key": "KEY" }, { stringData: { key: "K", cacert: "CA" } });
  const red = redactSecret(doc) as typeof doc & { stringData: unknown };
  assert.deepEqual(red.data, { "tls.crt": "CRT", "tls.key": "[redacted]" });
  assert.deepEqual(red.stringData, { key: "[redacted]", cacert: "CA" });
  assert.equal(doc.data["tls.key"], "KEY");
});

Deno.test("validateText accepts kubectl's Secret YAML and locates errors by line", () => {
  const ok = validateText(tlsSecretYaml("httpbin-credential", "mesh-system", httpbin), "s.yaml");
  assert.deepEqual(ok.issues, []);
  assert.equal(ok.resources.length, 1);
  assert.equal(ok.resources[0].resource.kind, "Secret");
  const text = tlsSecretYaml("httpbin-credential", "mesh-system", { ...httpbin, keyPem: other.keyPem });
  const bad = validateText(text, "s.yaml");
  assert.equal(bad.resources.length, 0);
  assert.deepEqual(bad.issues.map(formatIssue), [
    `error: s.yaml:10: document 1: Secret mesh-system/httpbin-credential: data["tls.key"]: ` +
    "the private key does not match the certificate in tls.crt",
  ]);
  // Other core kinds stay foreign, skipped as before.
  assert.equal(
    validateText("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "c.yaml").skipped.length,
    1,
  );
});
