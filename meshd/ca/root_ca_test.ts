import assert from "node:assert/strict";
import * as x509 from "@peculiar/x509";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { join } from "node:path";
import {
  CACERTS_FILES,
  CLOCK_SKEW_GRACE_MS,
  createSelfSignedRootCa,
  detectRootCaSource,
  ensureRootCa,
  loadRootCa,
  SELF_SIGNED_CERT_FILE,
  SELF_SIGNED_KEY_FILE,
} from "./root_ca.ts";
import { RootCaError } from "../../shared/internal/ca/root_ca_error.ts";
import { makeCa, pluggedInCa, tempDir, writeCacerts } from "./test_support.ts";

const DAY = 86_400_000;
const opts = { trustDomain: "cluster.local", rsaKeySize: 2048, ttlMs: 10 * 365 * DAY };

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const { dir, cleanup } = await tempDir();
  try {
    await fn(dir);
  } finally {
    await cleanup();
  }
}

async function rejectsWith(p: Promise<unknown>, file: string, reason: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof RootCaError, `expected RootCaError, got ${e}`);
    assert.equal(e.file, file);
    assert.match(e.reason, reason);
    assert.equal(e.message, `${file}: ${e.reason}`);
    return true;
  });
}

Deno.test("self-signed root: RSA of the configured size, the configured lifetime, key mode 0600, CA constraints", async () => {
  await withDir(async (parent) => {
    const dir = join(parent, "cacerts"); // created, mode 0700
    const now = new Date("2030-01-01T00:00:00Z");
    await createSelfSignedRootCa(dir, { ...opts, rsaKeySize: 3072, ttlMs: 100 * DAY, now });
    assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o700);
    assert.equal((await Deno.stat(join(dir, SELF_SIGNED_KEY_FILE))).mode! & 0o777, 0o600);
    const pem = await Deno.readTextFile(join(dir, SELF_SIGNED_CERT_FILE));
    const cert = new X509Certificate(pem);
    assert.equal(cert.ca, true);
    assert.equal(cert.subject, "O=cluster.local");
    assert.equal(cert.publicKey.asymmetricKeyDetails?.modulusLength, 3072);
    assert.equal(Date.parse(cert.validTo), now.getTime() + 100 * DAY);
    assert.equal(Date.parse(cert.validFrom), now.getTime() - CLOCK_SKEW_GRACE_MS);
    assert.ok(
      cert.checkPrivateKey(createPrivateKey(await Deno.readTextFile(join(dir, SELF_SIGNED_KEY_FILE)))),
    );
    const loaded = await loadRootCa(dir, { now });
    assert.equal(loaded.bundle.source, "self-signed");
    assert.equal(loaded.bundle.keyDescription, "rsa-3072");
    assert.deepEqual(loaded.bundle.intermediatePems, []);
    assert.equal(loaded.bundle.rootCertPem, loaded.bundle.signingCertPem);
    assert.deepEqual(loaded.bundle.warnings, []);
    assert.equal(loaded.signingKey.key.extractable, false);
  });
});

Deno.test("self-signed root: a restart reuses it (same fingerprint, files untouched)", async () => {
  await withDir(async (dir) => {
    assert.deepEqual(await ensureRootCa(dir, opts), { source: "self-signed", created: true, warnings: [] });
    const first = await loadRootCa(dir);
    const keyBefore = await Deno.readTextFile(join(dir, SELF_SIGNED_KEY_FILE));
    assert.deepEqual(await ensureRootCa(dir, opts), { source: "self-signed", created: false, warnings: [] });
    const second = await loadRootCa(dir);
    assert.equal(second.bundle.rootFingerprint, first.bundle.rootFingerprint);
    assert.equal(await Deno.readTextFile(join(dir, SELF_SIGNED_KEY_FILE)), keyBefore);
  });
});

Deno.test("self-signed root: refuses key sizes and TTLs it cannot use, and never overwrites", async () => {
  await withDir(async (dir) => {
    await rejectsWith(createSelfSignedRootCa(dir, { ...opts, rsaKeySize: 1024 }), dir, /2048 to 8192/);
    await rejectsWith(createSelfSignedRootCa(dir, { ...opts, ttlMs: 0 }), dir, /must be positive/);
    await createSelfSignedRootCa(dir, opts);
    await rejectsWith(
      createSelfSignedRootCa(dir, opts),
      join(dir, SELF_SIGNED_KEY_FILE),
      /appeared while the self-signed root was being created/,
    );
  });
});

Deno.test("self-signed root: half a root, an expired root, a swapped key are errors naming the file", async () => {
  await withDir(async (dir) => {
    await createSelfSignedRootCa(dir, opts);
    const key = await Deno.readTextFile(join(dir, SELF_SIGNED_KEY_FILE));
    await Deno.remove(join(dir, SELF_SIGNED_KEY_FILE));
    await rejectsWith(
      ensureRootCa(dir, opts),
      join(dir, SELF_SIGNED_KEY_FILE),
      /is missing while self-signed-ca-cert.pem exists/,
    );
    await Deno.writeTextFile(join(dir, SELF_SIGNED_KEY_FILE), key, { mode: 0o600 });
    await rejectsWith(
      loadRootCa(dir, { now: new Date(Date.now() + 11 * 365 * DAY) }),
      join(dir, SELF_SIGNED_CERT_FILE),
      /the self-signed root expired on .*remove self-signed-ca-cert.pem and self-signed-ca-key.pem/,
    );
  });
  await withDir(async (dir) => {
    await withDir(async (other) => {
      await createSelfSignedRootCa(dir, opts);
      await createSelfSignedRootCa(other, opts);
      await Deno.remove(join(dir, SELF_SIGNED_KEY_FILE));
      await Deno.copyFile(join(other, SELF_SIGNED_KEY_FILE), join(dir, SELF_SIGNED_KEY_FILE));
      await rejectsWith(loadRootCa(dir), join(dir, SELF_SIGNED_KEY_FILE), /does not match the certificate/);
    });
  });
});

Deno.test("plugged-in cacerts: an intermediate under a root is loaded; the root is not repeated as an intermediate", async () => {
  await withDir(async (dir) => {
    const { root, intermediate } = await pluggedInCa(dir);
    assert.equal(await detectRootCaSource(dir), "plugged-in");
    assert.deepEqual(await ensureRootCa(dir, opts), { source: "plugged-in", created: false, warnings: [] });
    assert.equal(await Deno.stat(join(dir, SELF_SIGNED_CERT_FILE)).catch(() => "absent"), "absent");
    const loaded = await loadRootCa(dir);
    assert.equal(loaded.bundle.source, "plugged-in");
    assert.equal(loaded.bundle.keyDescription, "ec-P-256");
    assert.ok(loaded.signingCert.equal(intermediate.cert));
    assert.deepEqual(loaded.bundle.intermediatePems, [intermediate.pem]);
    assert.equal(loaded.bundle.rootCertPem, root.pem);
    assert.equal(loaded.bundle.rootNotAfter.getTime(), root.cert.notAfter.getTime());
    assert.equal(loaded.bundle.chainNotAfter.getTime(), intermediate.cert.notAfter.getTime());
    assert.equal(loaded.chain.length, 2);
  });
});

Deno.test("plugged-in cacerts: cert-chain.pem without the root, and two levels of intermediates", async () => {
  await withDir(async (dir) => {
    const root = await makeCa("Root");
    const mid = await makeCa("Mid", { issuer: root });
    const ca = await makeCa("Issuing", { issuer: mid });
    await writeCacerts(dir, {
      caCert: ca.pem,
      caKey: ca.keyPem,
      certChain: ca.pem + mid.pem,
      rootCert: root.pem,
    });
    const loaded = await loadRootCa(dir);
    assert.deepEqual(loaded.bundle.intermediatePems, [ca.pem, mid.pem]);
  });
});

Deno.test("plugged-in cacerts win over a self-signed root in the same directory", async () => {
  await withDir(async (dir) => {
    await createSelfSignedRootCa(dir, opts);
    const { intermediate } = await pluggedInCa(dir);
    const loaded = await loadRootCa(dir);
    assert.equal(loaded.bundle.source, "plugged-in");
    assert.ok(loaded.signingCert.equal(intermediate.cert));
  });
});

Deno.test("bad cacerts: each mistake is an error naming the file and the reason", async () => {
  const root = await makeCa("Root");
  const intermediate = await makeCa("Intermediate", { issuer: root });
  const stranger = await makeCa("Stranger");
  const leafLike = await makeCa("Not a CA", { issuer: root, isCa: false });
  const expired = await makeCa("Expired", {
    issuer: root,
    notBefore: new Date(Date.now() - 10 * DAY),
    notAfter: new Date(Date.now() - DAY),
  });
  const good = {
    caCert: intermediate.pem,
    caKey: intermediate.keyPem,
    certChain: intermediate.pem,
    rootCert: root.pem,
  };
  const cases: [string, Partial<typeof good> | "missing-key", string, RegExp][] = [
    ["missing file", "missing-key", "", /incomplete plugged-in CA: ca-key.pem missing/],
    [
      "key of another CA",
      { caKey: stranger.keyPem },
      CACERTS_FILES.caKey,
      /does not match the certificate in ca-cert.pem/,
    ],
    ["garbage key", { caKey: "hello" }, CACERTS_FILES.caKey, /not a readable PEM private key/],
    ["empty cert", { caCert: "" }, CACERTS_FILES.caCert, /contains no PEM CERTIFICATE block/],
    [
      "corrupt cert",
      { caCert: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" },
      CACERTS_FILES.caCert,
      /not a valid X.509 certificate/,
    ],
    [
      "not a CA",
      { caCert: leafLike.pem, caKey: leafLike.keyPem, certChain: leafLike.pem },
      CACERTS_FILES.caCert,
      /"CN=Not a CA" is not a CA certificate/,
    ],
    [
      "expired",
      { caCert: expired.pem, caKey: expired.keyPem, certChain: expired.pem },
      CACERTS_FILES.caCert,
      /"CN=Expired" expired on/,
    ],
    [
      "chain in the wrong order",
      { certChain: root.pem + intermediate.pem },
      CACERTS_FILES.certChain,
      /first certificate is "CN=Root", not ca-cert.pem's "CN=Intermediate"/,
    ],
    [
      "chain not leading to the root",
      { certChain: intermediate.pem + stranger.pem },
      CACERTS_FILES.certChain,
      /certificate 1 "CN=Intermediate" is not issued by certificate 2 "CN=Stranger"/,
    ],
    [
      "root-cert.pem of another root",
      { rootCert: stranger.pem },
      CACERTS_FILES.certChain,
      /the last certificate "CN=Intermediate" is not issued by the root "CN=Stranger" in root-cert.pem/,
    ],
    [
      "encrypted key header",
      {
        caKey:
          "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n",
      },
      CACERTS_FILES.caKey,
      /the key is encrypted/,
    ],
  ];
  for (const [what, change, file, reason] of cases) {
    await withDir(async (dir) => {
      await writeCacerts(dir, { ...good, ...(change === "missing-key" ? {} : change) });
      if (change === "missing-key") await Deno.remove(join(dir, CACERTS_FILES.caKey));
      await assert.rejects(loadRootCa(dir), (e: unknown) => {
        assert.ok(e instanceof RootCaError, `${what}: ${e}`);
        assert.equal(e.file, file === "" ? dir : join(dir, file), what);
        assert.match(e.reason, reason, what);
        return true;
      });
    });
  }
});

Deno.test("plugged-in key readable by others: loaded, with a warning", async () => {
  await withDir(async (dir) => {
    await pluggedInCa(dir);
    await Deno.chmod(join(dir, CACERTS_FILES.caKey), 0o644);
    const loaded = await loadRootCa(dir);
    assert.equal(loaded.bundle.warnings.length, 1);
    assert.match(
      loaded.bundle.warnings[0],
      /ca-key.pem: private key is readable by group or others \(mode 644\)/,
    );
  });
});

Deno.test("an empty directory holds no CA for loadRootCa (which never writes)", async () => {
  await withDir(async (dir) => {
    await rejectsWith(loadRootCa(dir), dir, /holds no CA/);
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  });
});

Deno.test("self-signed root's subject and key usage are what Istio's are", async () => {
  await withDir(async (dir) => {
    await createSelfSignedRootCa(dir, { ...opts, trustDomain: "example.org" });
    const cert = new x509.X509Certificate(await Deno.readTextFile(join(dir, SELF_SIGNED_CERT_FILE)));
    assert.equal(cert.subject, "O=example.org");
    const ku = cert.getExtension(x509.KeyUsagesExtension)!;
    assert.ok(ku.critical);
    assert.ok(ku.usages & x509.KeyUsageFlags.keyCertSign);
    assert.ok(cert.getExtension(x509.BasicConstraintsExtension)!.critical);
  });
});

Deno.test("symbolic links out of ROOT_CA_DIR are warned about (the signer Worker could read their targets)", async () => {
  await withDir(async (parent) => {
    const dir = join(parent, "cacerts");
    await createSelfSignedRootCa(dir, opts);
    // Kubernetes-style links inside the directory are fine.
    await Deno.mkdir(join(dir, "..data"));
    await Deno.writeTextFile(join(dir, "..data", "extra.pem"), "");
    await Deno.symlink(join(dir, "..data", "extra.pem"), join(dir, "extra.pem"));
    assert.deepEqual((await ensureRootCa(dir, opts)).warnings, []);
    await Deno.writeTextFile(join(parent, "secret"), "");
    await Deno.symlink(join(parent, "secret"), join(dir, "link.pem"));
    const { warnings } = await ensureRootCa(dir, opts);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /link.pem: symbolic link to .*secret, outside ROOT_CA_DIR/);
  });
});
