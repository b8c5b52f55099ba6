import assert from "node:assert/strict";
import * as x509 from "@peculiar/x509";
import { generateKeyPairSync } from "node:crypto";
import { exportPkcs8Pem, importSigningKey, keyMatchesCertificate } from "./keys.ts";

Deno.test("importSigningKey: PKCS #8, SEC 1 and PKCS #1 PEM, non-extractable, with the matching algorithm", async () => {
  const ec = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const ec384 = generateKeyPairSync("ec", { namedCurve: "secp384r1" });
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const cases: [string, string, string][] = [
    [ec.privateKey.export({ type: "pkcs8", format: "pem" }) as string, "ec-P-256", "SHA-256"],
    [ec.privateKey.export({ type: "sec1", format: "pem" }) as string, "ec-P-256", "SHA-256"],
    [ec384.privateKey.export({ type: "sec1", format: "pem" }) as string, "ec-P-384", "SHA-384"],
    [rsa.privateKey.export({ type: "pkcs1", format: "pem" }) as string, "rsa-2048", "SHA-256"],
  ];
  for (const [pem, description, hash] of cases) {
    const k = await importSigningKey(pem);
    assert.equal(k.description, description);
    assert.equal(k.algorithm.hash, hash);
    assert.equal(k.key.extractable, false);
    assert.deepEqual(k.key.usages, ["sign"]);
  }
});

Deno.test("importSigningKey: encrypted, short RSA, Ed25519, other curves and garbage are refused", async () => {
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const encrypted = rsa.privateKey.export({
    type: "pkcs8",
    format: "pem",
    cipher: "aes-256-cbc",
    passphrase: "x",
  });
  await assert.rejects(importSigningKey(encrypted as string), /the key is encrypted/);
  const small = generateKeyPairSync("rsa", { modulusLength: 1024 });
  await assert.rejects(
    importSigningKey(small.privateKey.export({ type: "pkcs8", format: "pem" }) as string),
    /1024 bits; at least 2048/,
  );
  const ed = generateKeyPairSync("ed25519");
  await assert.rejects(
    importSigningKey(ed.privateKey.export({ type: "pkcs8", format: "pem" }) as string),
    /ed25519/,
  );
  const k1 = generateKeyPairSync("ec", { namedCurve: "secp256k1" });
  await assert.rejects(
    importSigningKey(k1.privateKey.export({ type: "pkcs8", format: "pem" }) as string),
    /secp256k1/,
  );
  await assert.rejects(importSigningKey("garbage"), /not a readable PEM private key/);
});

Deno.test("keyMatchesCertificate and exportPkcs8Pem", async () => {
  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]);
  const other = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: "CN=t",
    keys,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
  });
  const pem = await exportPkcs8Pem(keys.privateKey);
  assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n/);
  assert.equal(keyMatchesCertificate(pem, cert.toString("pem")), true);
  assert.equal(keyMatchesCertificate(await exportPkcs8Pem(other.privateKey), cert.toString("pem")), false);
});
