import assert from "node:assert/strict";
import { parsePemBlocks, pemCertificates, toPem } from "./pem.ts";

Deno.test("toPem and parsePemBlocks round-trip, with 64-character lines", () => {
  const der = Uint8Array.from({ length: 200 }, (_, i) => i);
  const pem = toPem(der, "CERTIFICATE");
  assert.ok(pem.endsWith("-----END CERTIFICATE-----\n"));
  assert.ok(pem.split("\n").slice(1, -2).every((l) => l.length <= 64));
  const [block] = parsePemBlocks(`comment\n${pem}trailing`);
  assert.equal(block.label, "CERTIFICATE");
  assert.deepEqual(block.der, der);
  assert.equal(block.pem, pem);
});

Deno.test("parsePemBlocks: CRLF, several blocks, and only certificates from pemCertificates", () => {
  const a = toPem(new Uint8Array([1]), "CERTIFICATE");
  const k = toPem(new Uint8Array([2]), "PRIVATE KEY");
  const text = (a + k + a).replaceAll("\n", "\r\n");
  assert.deepEqual(parsePemBlocks(text).map((b) => b.label), ["CERTIFICATE", "PRIVATE KEY", "CERTIFICATE"]);
  assert.equal(pemCertificates(text).length, 2);
});

Deno.test("parsePemBlocks: mismatched labels, bad base64 and encrypted-key headers are errors", () => {
  assert.throws(() => parsePemBlocks("-----BEGIN A-----\nAAAA\n-----END B-----"), /ends with "END B"/);
  assert.throws(() => parsePemBlocks("-----BEGIN A-----\nA*AA\n-----END A-----"), /not valid base64/);
  assert.throws(
    () =>
      parsePemBlocks(
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END RSA PRIVATE KEY-----",
      ),
    /encrypted keys are not supported/,
  );
  assert.deepEqual(parsePemBlocks("no pem here"), []);
});
