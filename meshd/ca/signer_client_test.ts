import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { join } from "node:path";
import { SignError } from "./leaf_cert.ts";
import { CACERTS_FILES, createSelfSignedRootCa } from "./root_ca.ts";
import { RootCaError } from "../../shared/internal/ca/root_ca_error.ts";
import { SignerClient } from "./signer_client.ts";
import { makeCsr, pluggedInCa, tempDir } from "./test_support.ts";

const rootOpts = { trustDomain: "cluster.local", rsaKeySize: 2048, ttlMs: 3_600_000 * 24 };

Deno.test("SignerClient.start: a directory without a usable CA fails with the RootCaError from the Worker", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await assert.rejects(SignerClient.start(dir), (e: unknown) => {
      assert.ok(e instanceof RootCaError);
      assert.equal(e.file, dir);
      assert.match(e.message, /holds no CA/);
      return true;
    });
    await pluggedInCa(dir);
    await Deno.writeTextFile(join(dir, CACERTS_FILES.caKey), "not a key");
    await assert.rejects(SignerClient.start(dir), (e: unknown) => {
      assert.ok(e instanceof RootCaError);
      assert.equal(e.file, join(dir, CACERTS_FILES.caKey));
      return true;
    });
  } finally {
    await cleanup();
  }
});

Deno.test("SignerClient: concurrent requests each get their own answer; refusals come back as SignError", async () => {
  const { dir, cleanup } = await tempDir();
  await createSelfSignedRootCa(dir, rootOpts);
  const signer = await SignerClient.start(dir);
  try {
    const names = Array.from({ length: 12 }, (_, i) => `sa-${i}`);
    const chains = await Promise.all(names.map(async (sa) => {
      const { csrPem } = await makeCsr();
      return await signer.sign({ csrPem, spiffeId: `spiffe://cluster.local/ns/ns/sa/${sa}`, ttlSeconds: 60 });
    }));
    chains.forEach((chain, i) => {
      assert.equal(
        new X509Certificate(chain[0]).subjectAltName,
        `URI:spiffe://cluster.local/ns/ns/sa/sa-${i}`,
      );
    });
    await assert.rejects(
      signer.sign({ csrPem: "junk", spiffeId: "spiffe://cluster.local/ns/ns/sa/x", ttlSeconds: 60 }),
      (e: unknown) => e instanceof SignError && e.kind === "parse",
    );
  } finally {
    signer.close();
    await cleanup();
  }
});

Deno.test("SignerClient.reload: picks up replaced files; a failed reload keeps the old CA", async () => {
  const { dir, cleanup } = await tempDir();
  await createSelfSignedRootCa(dir, rootOpts);
  const signer = await SignerClient.start(dir);
  try {
    const before = signer.bundle.rootFingerprint;
    assert.equal(signer.bundle.source, "self-signed");
    await pluggedInCa(dir); // the operator plugs in cacerts
    const after = await signer.reload();
    assert.equal(after.source, "plugged-in");
    assert.notEqual(after.rootFingerprint, before);
    await Deno.remove(join(dir, CACERTS_FILES.rootCert));
    await assert.rejects(signer.reload(), RootCaError);
    assert.equal(signer.bundle.source, "plugged-in", "the bundle stays");
    const { csrPem } = await makeCsr();
    const chain = await signer.sign({ csrPem, spiffeId: "spiffe://cluster.local/ns/a/sa/b", ttlSeconds: 60 });
    assert.equal(chain.length, 3, "still signing with the plugged-in intermediate");
  } finally {
    signer.close();
    await cleanup();
  }
});

Deno.test("SignerClient.close: later requests fail; close is idempotent", async () => {
  const { dir, cleanup } = await tempDir();
  await createSelfSignedRootCa(dir, rootOpts);
  const signer = await SignerClient.start(dir);
  const { csrPem } = await makeCsr();
  const pending = signer.sign({ csrPem, spiffeId: "spiffe://cluster.local/ns/a/sa/b", ttlSeconds: 60 });
  signer.close();
  signer.close();
  await assert.rejects(pending, /closed/);
  await assert.rejects(signer.probe({ op: "sys" }), /closed/);
  await cleanup();
});
