import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { createPrivateKey, createSign, createVerify } from "node:crypto";
import { Buffer } from "node:buffer";
import type { CertificateInfo } from "../../../proxy/runtime/snapshot.ts";
import {
  certificateInfoOf,
  CertificateManager,
  createCsr,
  tokenServiceAccount,
} from "../../../proxy/agent/certificate_manager.ts";
import { startCa, startRecordingCa, waitFor } from "../meshd_support.ts";

const grpcTest = (name: string, fn: () => Promise<void>) => Deno.test({ name, fn });

const SLEEP = "spiffe://cluster.local/ns/foo/sa/sleep";

async function harness() {
  const dir = await Deno.makeTempDir({ prefix: "agent-cert-test-" });
  const ca = await startCa(`${dir}/ca`);
  const recording = await startRecordingCa(ca);
  const { token } = await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
  const tokenFile = `${dir}/istio-token`;
  await Deno.writeTextFile(tokenFile, token + "\n");
  const managers: CertificateManager[] = [];
  const manager = (extra: Partial<ConstructorParameters<typeof CertificateManager>[0]> = {}) => {
    const m = new CertificateManager({
      address: `127.0.0.1:${recording.port}`,
      rootsPem: ca.trustBundlePem,
      tokenFile,
      backoff: { initialMs: 100, maxMs: 400 },
      ...extra,
    });
    managers.push(m);
    return m;
  };
  return {
    ca,
    token,
    tokenFile,
    ...recording,
    manager,
    async close() {
      managers.forEach((m) => m.stop());
      recording.stop();
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

function includes(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/** The key signs, the leaf's public key verifies: they belong together. */
function keyMatchesLeaf(cert: CertificateInfo): boolean {
  const data = "proof of possession";
  const sig = createSign("SHA256").update(data).sign(createPrivateKey(cert.privateKeyPem));
  return createVerify("SHA256").update(data).verify(new X509Certificate(cert.certChainPem).publicKey, sig);
}

grpcTest(
  "first CSR: authenticated by the bootstrap token; the request holds only the CSR; the issued SPIFFE ID",
  async () => {
    const h = await harness();
    try {
      const m = h.manager();
      const changes: (CertificateInfo | undefined)[] = [];
      m.onChange((c) => changes.push(c));
      m.start();
      const cert = await m.firstCertificate();
      assert.equal(cert.spiffeId, SLEEP);
      assert.equal(m.certificate, cert);
      assert.deepEqual(changes, [cert]);
      assert.ok(Object.isFrozen(cert));

      assert.equal(h.seen.length, 1);
      const [req] = h.seen;
      assert.equal(req.authorization, `Bearer ${h.token}`);
      assert.equal(req.peerSerial, undefined, "no client certificate before there is one");
      assert.deepEqual(Object.keys(req.request).sort(), ["csr", "metadata", "validityDuration"]);
      assert.deepEqual(req.request.metadata, {});
      assert.equal(req.request.validityDuration, 0, "meshd's default lifetime");
      assert.deepEqual(req.raw, req.reencoded, "no field beyond csr on the wire");
      assert.match(req.request.csr, /^-----BEGIN CERTIFICATE REQUEST-----/);
      // The key never left: neither its PEM nor its private scalar is in the request bytes.
      const raw = new TextDecoder().decode(req.raw);
      assert.ok(!raw.includes("PRIVATE KEY"));
      const d = createPrivateKey(cert.privateKeyPem).export({ format: "jwk" }).d!;
      assert.ok(!includes(req.raw, new Uint8Array(Buffer.from(d, "base64url"))));
      assert.ok(!raw.includes(d));
      // The CSR carries the public half of the key the certificate was issued for.
      const leaf = new X509Certificate(cert.certChainPem);
      assert.equal(leaf.subjectAltName, `URI:${SLEEP}`);
      assert.ok(keyMatchesLeaf(cert));
      assert.equal(cert.rootsPem.trim(), h.ca.trustBundlePem.trim());
      assert.equal(
        cert.certChainPem.match(/BEGIN CERTIFICATE/g)!.length,
        1,
        "leaf only; the root is in rootsPem",
      );
      assert.ok(
        Math.abs(cert.notAfter - (Date.now() + 3_600_000)) < 5000,
        "meshd's DEFAULT_WORKLOAD_CERT_TTL",
      );
      assert.equal(cert.notAfter, Date.parse(leaf.validTo));
      assert.match(cert.privateKeyPem, /^-----BEGIN PRIVATE KEY-----\n/);
      assert.equal(createPrivateKey(cert.privateKeyPem).asymmetricKeyDetails?.namedCurve, "prime256v1");
    } finally {
      await h.close();
    }
  },
);

grpcTest(
  "rotation at half life: a short TTL renews over mutual TLS with the current certificate and a new key",
  async () => {
    const h = await harness();
    try {
      const m = h.manager({ ttlSeconds: 4 });
      const changes: (CertificateInfo | undefined)[] = [];
      m.onChange((c) => changes.push(c));
      m.start();
      const first = await m.firstCertificate();
      const firstAt = Date.now();
      assert.ok(
        first.notAfter - Date.now() <= 4000 && first.notAfter - Date.now() > 2500,
        "the requested 4 s",
      );
      assert.equal(h.seen[0].request.validityDuration, 4);
      const rotateAt = m.status().rotateAt!;
      assert.ok(
        Math.abs(rotateAt - (firstAt + (first.notAfter - firstAt) / 2)) < 200,
        "half of the remaining life",
      );

      await waitFor(() => changes.length === 2, 5000, "rotation");
      const took = Date.now() - firstAt;
      assert.ok(took >= 1200 && took < 3200, `rotated after ${took} ms`);
      const second = changes[1]!;
      assert.equal(m.certificate, second);
      assert.equal(second.spiffeId, SLEEP);
      assert.ok(second.notAfter > first.notAfter);
      assert.notEqual(second.privateKeyPem, first.privateKeyPem, "a new key for every CSR");
      assert.ok(keyMatchesLeaf(second));

      const renewal = h.seen[1];
      assert.equal(renewal.authorization, undefined, "no token: the certificate authenticates");
      assert.equal(renewal.peerSerial, new X509Certificate(first.certChainPem).serialNumber);
      assert.deepEqual(renewal.raw, renewal.reencoded);
      assert.equal(renewal.code, 0);
    } finally {
      await h.close();
    }
  },
);

grpcTest(
  "a failed renewal retries with backoff, keeps the old certificate until it expires, then uses the token",
  async () => {
    const h = await harness();
    try {
      const m = h.manager({ ttlSeconds: 3 });
      const changes: (CertificateInfo | undefined)[] = [];
      m.onChange((c) => changes.push(c));
      m.start();
      const first = await m.firstCertificate();
      h.failing.on = true;

      // Renewals fail from half life on; the old certificate stays in force meanwhile.
      await waitFor(() => m.status().failures >= 3, 4000, "three failed renewals");
      assert.equal(m.certificate, first);
      assert.ok(Date.now() < first.notAfter);
      const failed = h.seen.slice(1);
      assert.ok(failed.every((s) => s.code === 14 && s.peerSerial !== undefined));
      const gaps = failed.slice(1).map((s, i) => s.at - failed[i].at);
      assert.ok(gaps[0] >= 40 && gaps[0] <= 250, `first retry after ${gaps[0]} ms`);
      assert.ok(gaps[1] >= 90, `second retry after ${gaps[1]} ms`);
      assert.match(
        m.status().lastError!,
        /CreateCertificate failed \(code 14\): the CA is failing on purpose/,
      );

      // At NotAfter the expired certificate is withdrawn.
      await waitFor(() => changes.length === 2, 3000, "expiry");
      assert.equal(changes[1], undefined);
      assert.equal(m.certificate, undefined);
      assert.ok(Date.now() >= first.notAfter);

      // The CA recovers: with no valid certificate left, the bootstrap token is used again.
      h.failing.on = false;
      await waitFor(() => m.certificate !== undefined, 3000, "recovery");
      const last = h.seen[h.seen.length - 1];
      assert.equal(last.authorization, `Bearer ${h.token}`);
      assert.equal(last.peerSerial, undefined);
      assert.equal(m.status().failures, 0);
    } finally {
      await h.close();
    }
  },
);

grpcTest("refusals are reported and retried: a CSR for another identity, a missing token file", async () => {
  const h = await harness();
  try {
    const other = h.manager({ serviceAccount: "admin" });
    other.start();
    await waitFor(() => other.status().failures >= 1, 3000);
    assert.match(
      other.status().lastError!,
      /code 7\): spiffe:\/\/cluster.local\/ns\/foo\/sa\/sleep may not obtain a certificate for another identity/,
    );
    assert.equal(other.certificate, undefined);
    other.stop();

    const missing = h.manager({ tokenFile: `${h.tokenFile}.absent` });
    missing.start();
    await waitFor(() => missing.status().failures >= 2, 3000);
    assert.match(missing.status().lastError!, /bootstrap token .*istio-token.absent: /);
    const before = h.seen.length;
    await Deno.copyFile(h.tokenFile, `${h.tokenFile}.absent`);
    await waitFor(() => missing.certificate !== undefined, 3000, "the token file appears");
    assert.equal(h.seen.length, before + 1);
  } finally {
    await h.close();
  }
});

Deno.test("tokenServiceAccount: the identity of a token's sub, without verifying it", () => {
  const enc = (o: unknown) =>
    btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  const jwt = (sub: unknown) => `${enc({ alg: "ES256" })}.${enc({ sub })}.sig`;
  assert.deepEqual(tokenServiceAccount(jwt("system:serviceaccount:foo:sleep")), {
    namespace: "foo",
    serviceAccount: "sleep",
  });
  assert.equal(tokenServiceAccount(jwt("user:alice")), undefined);
  assert.equal(tokenServiceAccount("not-a-jwt"), undefined);
  assert.equal(tokenServiceAccount("a.%%%.c"), undefined);
});

grpcTest("certificateInfoOf: a leaf for another key, or another identity, is refused", async () => {
  const dir = await Deno.makeTempDir();
  const ca = await startCa(dir);
  try {
    const mine = await createCsr(SLEEP);
    const theirs = await createCsr(SLEEP);
    const chain = await ca.sign({ csrPem: theirs.csrPem, namespace: "foo", serviceAccount: "sleep" });
    await assert.rejects(certificateInfoOf(chain, mine.keys), /does not carry the key of the CSR/);
    await assert.rejects(
      certificateInfoOf(chain, theirs.keys, "spiffe://cluster.local/ns/foo/sa/other"),
      /the CA issued spiffe:\/\/cluster.local\/ns\/foo\/sa\/sleep, not the requested/,
    );
    await assert.rejects(certificateInfoOf(chain.slice(0, 1), theirs.keys), /leaf and root expected/);
    const info = await certificateInfoOf(chain, theirs.keys, SLEEP);
    assert.equal(info.spiffeId, SLEEP);
  } finally {
    await ca.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
