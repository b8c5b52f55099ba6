import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { join } from "node:path";
import {
  CACERTS_FILES,
  CertificateAuthority,
  type CertificateAuthorityOptions,
  parseTokenAudiences,
  RootCaError,
  SELF_SIGNED_CERT_FILE,
} from "./mod.ts";
import { makeCsr, pluggedInCa, tempDir } from "./test_support.ts";

const HOUR = 3_600_000;
const base = (rootCaDir: string): CertificateAuthorityOptions => ({
  rootCaDir,
  trustDomain: "cluster.local",
  selfSignedRsaKeySize: 2048,
  selfSignedTtlMs: 87_600 * HOUR,
  defaultTtlMs: 24 * HOUR,
  maxTtlMs: 2160 * HOUR,
  tokenAudiences: "mesh-ca",
});

Deno.test("parseTokenAudiences: comma list, blanks dropped, duplicates removed, mesh-ca by default", () => {
  assert.deepEqual(parseTokenAudiences(""), ["mesh-ca"]);
  assert.deepEqual(parseTokenAudiences(" a, b ,,a "), ["a", "b"]);
  assert.deepEqual(parseTokenAudiences(["x"]), ["x"]);
});

Deno.test("a restart reuses the root CA (same fingerprint) and the token key (old tokens still work)", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const first = new CertificateAuthority();
    const bundle1 = await first.start(base(dir));
    assert.equal(first.createdRoot, true);
    assert.equal(bundle1.source, "self-signed");
    const token = await first.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
    const certBefore = await Deno.readTextFile(join(dir, SELF_SIGNED_CERT_FILE));
    await first.stop();

    const second = new CertificateAuthority();
    const bundle2 = await second.start(base(dir));
    try {
      assert.equal(second.createdRoot, false);
      assert.equal(bundle2.rootFingerprint, bundle1.rootFingerprint);
      assert.equal(await Deno.readTextFile(join(dir, SELF_SIGNED_CERT_FILE)), certBefore);
      const auth = await second.authenticate({ authorization: `Bearer ${token.token}` });
      assert.ok(auth.ok && auth.identity.serviceAccount === "sleep");
    } finally {
      await second.stop();
    }
  } finally {
    await cleanup();
  }
});

Deno.test("plugged-in cacerts are used: leaves are issued by the intermediate, the chain ends with the root", async () => {
  const { dir, cleanup } = await tempDir();
  const ca = new CertificateAuthority();
  try {
    const { root, intermediate } = await pluggedInCa(dir);
    const bundle = await ca.start(base(dir));
    assert.equal(bundle.source, "plugged-in");
    assert.equal(ca.createdRoot, false);
    assert.equal(ca.trustBundlePem, root.pem);
    const { csrPem } = await makeCsr();
    const chain = await ca.sign({ csrPem, namespace: "foo", serviceAccount: "sleep" });
    assert.deepEqual(chain.slice(1), [intermediate.pem, root.pem]);
    const leaf = new X509Certificate(chain[0]);
    assert.ok(leaf.checkIssued(new X509Certificate(intermediate.pem)));
    assert.ok(leaf.verify(new X509Certificate(intermediate.pem).publicKey));
    assert.equal(leaf.subjectAltName, "URI:spiffe://cluster.local/ns/foo/sa/sleep");
    assert.deepEqual(
      [...Deno.readDirSync(dir)].map((e) => e.name).sort(),
      [...Object.values(CACERTS_FILES), "token-signing-key.pem"].sort(),
      "no self-signed root was created beside the cacerts",
    );
  } finally {
    await ca.stop();
    await cleanup();
  }
});

Deno.test("bad cacerts: start fails with an error naming the file; nothing keeps running", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await pluggedInCa(dir);
    await Deno.remove(join(dir, CACERTS_FILES.rootCert));
    const ca = new CertificateAuthority();
    await assert.rejects(ca.start(base(dir)), (e: unknown) => {
      assert.ok(e instanceof RootCaError);
      assert.match(e.message, /incomplete plugged-in CA: root-cert.pem missing/);
      return true;
    });
    assert.throws(() => ca.bundle, /not started/);
  } finally {
    await cleanup();
  }
});

Deno.test("sign: TTL default and cap; start twice, use before start, stop twice", async () => {
  const { dir, cleanup } = await tempDir();
  const ca = new CertificateAuthority();
  await assert.rejects(ca.sign({ csrPem: "", namespace: "a", serviceAccount: "b" }), /not started/);
  try {
    await ca.start({ ...base(dir), defaultTtlMs: 2 * HOUR, maxTtlMs: 4 * HOUR });
    await assert.rejects(ca.start(base(dir)), /already started/);
    const { csrPem } = await makeCsr();
    for (const [ttlMs, expected] of [[undefined, 2 * HOUR], [HOUR, HOUR], [100 * HOUR, 4 * HOUR]] as const) {
      const before = Date.now();
      const [leaf] = await ca.sign({ csrPem, namespace: "a", serviceAccount: "b", ttlMs });
      const notAfter = Date.parse(new X509Certificate(leaf).validTo);
      assert.ok(Math.abs(notAfter - (before + expected)) < 2000, `ttl ${ttlMs}`);
    }
  } finally {
    await ca.stop();
    await ca.stop();
    await cleanup();
  }
});

Deno.test("the facade's signer Worker cannot read outside ROOT_CA_DIR nor use the network", async () => {
  const { dir, cleanup } = await tempDir();
  const ca = new CertificateAuthority();
  try {
    await ca.start(base(dir));
    const read = await ca.probeSandbox({ op: "read", path: "/etc/hostname" });
    assert.equal(read.allowed, false);
    assert.match(read.errorName!, /^(NotCapable|PermissionDenied)$/);
    const net = await ca.probeSandbox({ op: "net", hostname: "127.0.0.1", port: 15012 });
    assert.equal(net.allowed, false);
    assert.match(net.errorName!, /^(NotCapable|PermissionDenied)$/);
  } finally {
    await ca.stop();
    await cleanup();
  }
});

Deno.test("warnings: a CA key readable by others is reported at start", async () => {
  const { dir, cleanup } = await tempDir();
  const ca = new CertificateAuthority();
  try {
    await pluggedInCa(dir);
    await Deno.chmod(join(dir, CACERTS_FILES.caKey), 0o640);
    await ca.start(base(dir));
    assert.equal(ca.warnings.length, 1);
    assert.match(ca.warnings[0], /ca-key.pem: private key is readable by group or others \(mode 640\)/);
  } finally {
    await ca.stop();
    await cleanup();
  }
});
