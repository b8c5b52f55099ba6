import assert from "node:assert/strict";
import * as x509 from "@peculiar/x509";
import { join } from "node:path";
import {
  CertificateAuthority,
  type CertificateAuthorityOptions,
  RootCaError,
  SELF_SIGNED_CERT_FILE,
} from "./mod.ts";
import { pemCertificates } from "../../shared/internal/ca/pem.ts";
import { createSelfSignedRootCa, loadRootCa } from "./root_ca.ts";
import { MAX_PREVIOUS_ROOTS, renewSelfSignedRoot, writeSelfSignedRoots } from "./root_renewal.ts";
import { makeCsr, pluggedInCa, tempDir } from "./test_support.ts";

const HOUR = 3_600_000;
const base = (rootCaDir: string, selfSignedTtlMs = HOUR): CertificateAuthorityOptions => ({
  rootCaDir,
  trustDomain: "cluster.local",
  selfSignedRsaKeySize: 2048,
  selfSignedTtlMs,
  defaultTtlMs: 60_000,
  maxTtlMs: HOUR,
  tokenAudiences: "mesh-ca",
});

const certs = (pem: string) =>
  pemCertificates(pem).map((b) => new x509.X509Certificate(b.der as Uint8Array<ArrayBuffer>));
const spki = (c: x509.X509Certificate) => new Uint8Array(c.publicKey.rawData).join();

/** `openssl verify` of `leafPem` against exactly `rootPem`; returns its output. */
async function opensslVerify(dir: string, rootPem: string, leafPem: string): Promise<string> {
  await Deno.writeTextFile(join(dir, "v-root.pem"), rootPem);
  await Deno.writeTextFile(join(dir, "v-leaf.pem"), leafPem);
  const out = await new Deno.Command("openssl", {
    args: ["verify", "-purpose", "sslclient", "-CAfile", join(dir, "v-root.pem"), join(dir, "v-leaf.pem")],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return d.decode(out.stdout) + d.decode(out.stderr);
}

async function leaf(ca: CertificateAuthority): Promise<{ chain: string[]; der: Uint8Array }> {
  const csr = await makeCsr();
  const chain = await ca.sign({ csrPem: csr.csrPem, namespace: "foo", serviceAccount: "sleep" });
  return { chain, der: new Uint8Array(new x509.X509Certificate(chain[0]).rawData) };
}

Deno.test("rotateRoot: a new root from the same key; both roots in bundle and file; old and new leaves verify; a restart keeps both", async () => {
  const { dir, cleanup } = await tempDir();
  const ca = new CertificateAuthority();
  try {
    const before = await ca.start(base(dir));
    const oldLeaf = await leaf(ca);
    const seen: string[] = [];
    ca.onBundleChange((b) => seen.push(b.rootFingerprint));

    const after = await ca.rotateRoot(2 * HOUR);
    assert.notEqual(after.rootFingerprint, before.rootFingerprint);
    assert.deepEqual(seen, [after.rootFingerprint], "listeners hear of the new bundle");
    const [newRoot, oldRoot, ...more] = certs(after.rootCertPem);
    assert.equal(more.length, 0);
    assert.equal(oldRoot.toString("pem") + "\n", before.rootCertPem, "the old root stays in the bundle");
    assert.equal(spki(newRoot), spki(oldRoot), "same key (Istio's GenRootCertFromExistingKey)");
    assert.equal(newRoot.subject, oldRoot.subject);
    assert.notEqual(newRoot.serialNumber, oldRoot.serialNumber);
    assert.ok(
      Math.abs(newRoot.notAfter.getTime() - (Date.now() + 2 * HOUR)) < 60_000,
      "CA_SELF_SIGNED_CA_CERT_TTL",
    );
    assert.ok(newRoot.getExtension(x509.BasicConstraintsExtension)?.ca);
    assert.equal(
      newRoot.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
      oldRoot.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
    );
    assert.equal(after.rootNotAfter.getTime(), newRoot.notAfter.getTime());
    assert.equal(ca.trustBundlePem, after.rootCertPem);
    assert.equal(await Deno.readTextFile(join(dir, SELF_SIGNED_CERT_FILE)), after.rootCertPem);

    const newLeaf = await leaf(ca);
    assert.equal(newLeaf.chain[newLeaf.chain.length - 1], after.rootCertPem, "new leaves carry both roots");
    const newRootPem = newRoot.toString("pem") + "\n";
    assert.match(await opensslVerify(dir, newRootPem, newLeaf.chain[0]), /: OK/, "new leaf, new root");
    assert.match(await opensslVerify(dir, newRootPem, oldLeaf.chain[0]), /: OK/, "old leaf, new root");
    assert.match(
      await opensslVerify(dir, before.rootCertPem, newLeaf.chain[0]),
      /: OK/,
      "new leaf, old root",
    );
    const auth = await ca.authenticate({ peerCertificateDer: oldLeaf.der });
    assert.ok(auth.ok, "a renewal with a certificate of the old root is accepted");
    await ca.stop();

    const again = new CertificateAuthority();
    try {
      const restarted = await again.start(base(dir));
      assert.equal(restarted.rootFingerprint, after.rootFingerprint);
      assert.equal(
        restarted.rootCertPem,
        after.rootCertPem,
        "a restart keeps the earlier root until it expires",
      );
    } finally {
      await again.stop();
    }
  } finally {
    await ca.stop();
    await cleanup();
  }
});

Deno.test("checkRoot: rotates a root inside its grace period, leaves a fresh one, prunes the old root once it expired", async () => {
  const { dir, cleanup } = await tempDir();
  const ca = new CertificateAuthority();
  try {
    // A 3 s root (NotBefore 2 min back): 20 % of its 123 s lifetime is more than it has left.
    const first = await ca.start(base(dir, 3000));
    const settings = { gracePeriodPercentile: 20, rootTtlMs: HOUR };
    assert.equal(await ca.checkRoot(settings), "rotated");
    assert.equal(certs(ca.trustBundlePem).length, 2);
    assert.equal(await ca.checkRoot(settings), "unchanged", "the new root has 1 h left");
    const wait = first.rootNotAfter.getTime() - Date.now() + 200;
    await new Promise((r) => setTimeout(r, Math.max(0, wait)));
    assert.equal(await ca.checkRoot(settings), "pruned");
    assert.equal(certs(ca.trustBundlePem).length, 1, "the expired root left the bundle");
    assert.notEqual(ca.bundle.rootFingerprint, first.rootFingerprint);
    const after = await leaf(ca);
    assert.equal(certs(after.chain[after.chain.length - 1]).length, 1);
    assert.equal(await ca.checkRoot(settings), "unchanged");
  } finally {
    await ca.stop();
    await cleanup();
  }
});

Deno.test("root renewal: plugged-in roots are never rotated; the file keeps at most 3 earlier roots; strangers are refused", async () => {
  const plugged = await tempDir();
  const ca = new CertificateAuthority();
  try {
    await pluggedInCa(plugged.dir);
    await ca.start(base(plugged.dir));
    assert.equal(await ca.checkRoot({ gracePeriodPercentile: 100, rootTtlMs: HOUR }), "plugged-in");
    await assert.rejects(ca.rotateRoot(HOUR), RootCaError);
  } finally {
    await ca.stop();
    await plugged.cleanup();
  }

  const { dir, cleanup } = await tempDir();
  try {
    await createSelfSignedRootCa(dir, { trustDomain: "cluster.local", rsaKeySize: 2048, ttlMs: HOUR });
    const loaded = await loadRootCa(dir);
    let bundle = loaded.bundle.rootCertPem;
    for (let i = 0; i < 5; i++) {
      await writeSelfSignedRoots(dir, await renewSelfSignedRoot(loaded, { ttlMs: HOUR }), bundle);
      bundle = (await loadRootCa(dir)).bundle.rootCertPem;
    }
    assert.equal(certs(bundle).length, 1 + MAX_PREVIOUS_ROOTS);
    const leftovers = [...Deno.readDirSync(dir)].filter((e) => e.name.endsWith(".tmp"));
    assert.deepEqual(leftovers, [], "no temporary files are left");

    const other = await tempDir();
    await createSelfSignedRootCa(other.dir, { trustDomain: "cluster.local", rsaKeySize: 2048, ttlMs: HOUR });
    const stranger = await Deno.readTextFile(join(other.dir, SELF_SIGNED_CERT_FILE));
    await other.cleanup();
    await Deno.writeTextFile(join(dir, SELF_SIGNED_CERT_FILE), bundle + stranger);
    await assert.rejects(
      loadRootCa(dir),
      (e: Error) =>
        e instanceof RootCaError &&
        /certificate 5 .* is not an earlier self-signed root of the same key/.test(e.message),
    );
  } finally {
    await cleanup();
  }
});
