import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import * as x509 from "@peculiar/x509";
import { X509Certificate } from "node:crypto";
import { BootstrapTokenIssuer, loadOrCreateTokenKey } from "../../shared/internal/ca/bootstrap_tokens.ts";
import { effectiveTtlSeconds, IMPERSONATED_IDENTITY_KEY, NODE_AUTHENTICATION_ABSENT } from "./ca_service.ts";
import { CertificateAuthority } from "./mod.ts";
import { CLOCK_SKEW_GRACE_MS } from "./root_ca.ts";
import {
  bind,
  certificateClient,
  createCertificate,
  makeCa,
  makeCsr,
  SERVER_NAME,
  tempDir,
} from "./test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const HOUR = 3_600_000;
const SLEEP = "spiffe://cluster.local/ns/foo/sa/sleep";

Deno.test("effectiveTtlSeconds: default for none or negative, capped at the maximum", () => {
  assert.equal(effectiveTtlSeconds(0, 24 * HOUR, 90 * 24 * HOUR), 86_400);
  assert.equal(effectiveTtlSeconds(-5, 24 * HOUR, 90 * 24 * HOUR), 86_400);
  assert.equal(effectiveTtlSeconds(600, 24 * HOUR, 90 * 24 * HOUR), 600);
  assert.equal(effectiveTtlSeconds(10 ** 12, 24 * HOUR, 48 * HOUR), 172_800);
  assert.equal(effectiveTtlSeconds(Number.NaN, 24 * HOUR, 48 * HOUR), 86_400);
  assert.equal(
    effectiveTtlSeconds(0, 72 * HOUR, 48 * HOUR),
    172_800,
    "a default above the cap is capped too",
  );
});

type Counts = Record<string, number>;

/** A started CA with its gRPC server on 127.0.0.1, and counters behind the hooks. */
async function harness() {
  const { dir, cleanup } = await tempDir();
  const counts: Counts = {};
  const reasons: string[] = [];
  const bump = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);
  const ca = new CertificateAuthority();
  await ca.start({
    rootCaDir: dir,
    trustDomain: "cluster.local",
    selfSignedRsaKeySize: 2048,
    selfSignedTtlMs: 365 * 24 * HOUR,
    defaultTtlMs: 24 * HOUR,
    maxTtlMs: 48 * HOUR,
    tokenAudiences: "mesh-ca,other-aud",
  });
  const server = new grpc.Server();
  ca.register(server, {
    onCsr: () => bump("csr"),
    onAuthFailure: (r) => (bump("authFailure"), reasons.push(r)),
    onIdExtractionError: () => bump("idExtraction"),
    onParseError: () => bump("parse"),
    onSignError: () => bump("sign"),
    onSuccess: () => bump("success"),
  });
  const { credentials } = await ca.serverCredentials({ dnsNames: [SERVER_NAME] });
  const port = await bind(server, credentials);
  const clients: grpc.Client[] = [];
  const client = (cert?: { certChainPem: string; privateKeyPem: string }) => {
    const c = certificateClient(port, ca.trustBundlePem, cert);
    clients.push(c);
    return c;
  };
  return {
    ca,
    dir,
    counts,
    reasons,
    client,
    async close() {
      clients.forEach((c) => c.close());
      await within(
        new Promise<void>((r) => server.tryShutdown(() => r())),
        5000,
        "the CA gRPC server shut down",
      );
      await ca.stop();
      await cleanup();
    },
  };
}

function isError(r: unknown): r is grpc.ServiceError {
  return r instanceof Error;
}

Deno.test(
  "CreateCertificate: a token for foo/sleep gets a leaf for foo/sleep; the CSR's subject and DNS SANs are ignored",
  async () => {
    const h = await harness();
    try {
      const { token } = await h.ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
      const csr = await makeCsr({ subject: "CN=admin,O=system:masters", dnsNames: ["evil.example.com"] });
      const res = await createCertificate(h.client(), { csr: csr.csrPem }, token);
      assert.ok(!isError(res), String(res));
      assert.equal(res.certChain.length, 2, "leaf and root");
      const leaf = new X509Certificate(res.certChain[0]);
      assert.equal(leaf.subjectAltName, `URI:${SLEEP}`);
      assert.equal(leaf.subject, undefined);
      assert.ok(leaf.checkIssued(new X509Certificate(res.certChain[1])));
      assert.equal(res.certChain[1], h.ca.trustBundlePem, "root last");
      assert.deepEqual(h.counts, { csr: 1, success: 1 });
    } finally {
      await h.close();
    }
  },
);

Deno.test(
  "CreateCertificate: a CSR asking for another identity is refused with PERMISSION_DENIED and counted",
  async () => {
    const h = await harness();
    try {
      const { token } = await h.ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
      const other = await makeCsr({ uris: ["spiffe://cluster.local/ns/istio-system/sa/istiod"] });
      const res = await createCertificate(h.client(), { csr: other.csrPem }, token);
      assert.ok(isError(res));
      assert.equal(res.code, grpc.status.PERMISSION_DENIED);
      assert.deepEqual(h.counts, { csr: 1, authFailure: 1 });
      assert.match(
        h.reasons[0],
        /istio-system\/sa\/istiod.*caller is spiffe:\/\/cluster.local\/ns\/foo\/sa\/sleep/,
      );

      // The same client asking for its own identity in the SAN succeeds.
      const own = await makeCsr({ uris: [SLEEP] });
      const ok = await createCertificate(h.client(), { csr: own.csrPem }, token);
      assert.ok(!isError(ok), String(ok));
      assert.equal(new X509Certificate(ok.certChain[0]).subjectAltName, `URI:${SLEEP}`);
    } finally {
      await h.close();
    }
  },
);

Deno.test(
  "CreateCertificate: wrong audience, expired, foreign key, missing credential: UNAUTHENTICATED, counted",
  async () => {
    const h = await harness();
    try {
      const csr = await makeCsr();
      const { dir: otherDir, cleanup } = await tempDir();
      const foreign = await BootstrapTokenIssuer.open(otherDir, { audiences: ["mesh-ca"] });
      const wrongAud = new BootstrapTokenIssuer(await loadOrCreateTokenKey(h.dir), {
        audiences: ["kubernetes"],
      });
      const tokens = {
        wrongAudience: (await wrongAud.issue({ namespace: "foo", serviceAccount: "sleep" })).token,
        expired:
          (await h.ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep", durationSeconds: 60 }))
            .token,
        foreignKey: (await foreign.issue({ namespace: "foo", serviceAccount: "sleep" })).token,
      };
      // An expired token: minted by the CA's own key two hours ago.
      const past = new BootstrapTokenIssuer(await loadOrCreateTokenKey(h.dir), { audiences: ["mesh-ca"] });
      tokens.expired = (await past.issue({
        namespace: "foo",
        serviceAccount: "sleep",
        durationSeconds: 3600,
        now: new Date(Date.now() - 2 * HOUR),
      })).token;
      for (const [what, token] of Object.entries(tokens)) {
        const res = await createCertificate(h.client(), { csr: csr.csrPem }, token);
        assert.ok(isError(res), what);
        assert.equal(res.code, grpc.status.UNAUTHENTICATED, what);
        assert.equal(res.details, "request authenticate failure", "the reason is not told to the caller");
      }
      const none = await createCertificate(h.client(), { csr: csr.csrPem });
      assert.ok(isError(none));
      assert.equal(none.code, grpc.status.UNAUTHENTICATED);
      assert.deepEqual(h.counts, { csr: 4, authFailure: 4 });
      assert.match(h.reasons[0], /claim aud/);
      assert.match(h.reasons[1], /expired/);
      assert.match(h.reasons[2], /signature/);
      assert.match(h.reasons[3], /no credential/);
      await cleanup();
    } finally {
      await h.close();
    }
  },
);

Deno.test(
  "CreateCertificate: renewal over mutual TLS with the certificate the CA issued, without a token",
  async () => {
    const h = await harness();
    try {
      const { token } = await h.ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
      const first = await makeCsr({ uris: [SLEEP] });
      const issued = await createCertificate(h.client(), { csr: first.csrPem }, token);
      assert.ok(!isError(issued), String(issued));

      const renewalKey = await makeCsr();
      const mtls = h.client({
        certChainPem: issued.certChain.slice(0, -1).join(""),
        privateKeyPem: first.privateKeyPem,
      });
      const renewed = await createCertificate(mtls, { csr: renewalKey.csrPem, validityDuration: 3600 });
      assert.ok(!isError(renewed), String(renewed));
      const leaf = new X509Certificate(renewed.certChain[0]);
      assert.equal(leaf.subjectAltName, `URI:${SLEEP}`);
      assert.notEqual(leaf.serialNumber, new X509Certificate(issued.certChain[0]).serialNumber);
      assert.deepEqual(h.counts, { csr: 2, success: 2 });
    } finally {
      await h.close();
    }
  },
);

Deno.test("CreateCertificate: a client certificate from a foreign CA does not authenticate", async () => {
  const h = await harness();
  try {
    const foreignRoot = await makeCa("Foreign Root");
    const workload = await makeCsr();
    const leaf = await x509.X509CertificateGenerator.create({
      subject: "",
      issuer: foreignRoot.cert.subjectName,
      publicKey: workload.keys.publicKey,
      signingKey: foreignRoot.keys.privateKey,
      signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
      notBefore: new Date(Date.now() - HOUR),
      notAfter: new Date(Date.now() + HOUR),
      extensions: [new x509.SubjectAlternativeNameExtension([{ type: "url", value: SLEEP }], true)],
    });
    const c = h.client({ certChainPem: leaf.toString("pem"), privateKeyPem: workload.privateKeyPem });
    const res = await createCertificate(c, { csr: (await makeCsr()).csrPem });
    assert.ok(isError(res));
    assert.equal(res.code, grpc.status.UNAUTHENTICATED);
    assert.deepEqual(h.counts, { csr: 1, authFailure: 1 });
  } finally {
    await h.close();
  }
});

Deno.test(
  "CreateCertificate: TTL is the default when none is asked, capped at the maximum; NotBefore backdated",
  async () => {
    const h = await harness();
    try {
      const { token } = await h.ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
      const cases: [number, number][] = [[0, 24 * HOUR], [-1, 24 * HOUR], [7200, 2 * HOUR], [
        10 ** 9,
        48 * HOUR,
      ]];
      for (const [asked, expected] of cases) {
        const before = Date.now();
        const res = await createCertificate(h.client(), {
          csr: (await makeCsr()).csrPem,
          validityDuration: asked,
        }, token);
        assert.ok(!isError(res), String(res));
        const leaf = new X509Certificate(res.certChain[0]);
        const notAfter = Date.parse(leaf.validTo);
        const notBefore = Date.parse(leaf.validFrom);
        // Certificate times have one-second resolution.
        assert.ok(
          notAfter >= before + expected - 1000 && notAfter <= Date.now() + expected,
          `ttl for ${asked}`,
        );
        assert.ok(
          notBefore <= before - CLOCK_SKEW_GRACE_MS + 1000 &&
            notBefore >= before - CLOCK_SKEW_GRACE_MS - 2000,
        );
      }
    } finally {
      await h.close();
    }
  },
);

Deno.test(
  "CreateCertificate: malformed or forged CSRs are INVALID_ARGUMENT and counted as parse errors",
  async () => {
    const h = await harness();
    try {
      const { token } = await h.ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
      const good = await makeCsr();
      // A CSR whose signature was made by another key: the requester does not hold the key it names.
      const other = await makeCsr();
      const forged = new x509.Pkcs10CertificateRequest(good.csrPem);
      const tampered = new Uint8Array(forged.rawData);
      tampered[tampered.length - 5] ^= 0xff;
      const { toPem } = await import("../../shared/internal/ca/pem.ts");
      const bad = ["", "not a csr", other.csrPem + good.csrPem, toPem(tampered, "CERTIFICATE REQUEST")];
      for (const csr of bad) {
        const res = await createCertificate(h.client(), { csr }, token);
        assert.ok(isError(res), JSON.stringify(csr.slice(0, 20)));
        assert.equal(res.code, grpc.status.INVALID_ARGUMENT, res.details);
      }
      assert.deepEqual(h.counts, { csr: 4, parse: 4 });
    } finally {
      await h.close();
    }
  },
);

Deno.test("CreateCertificate: Istio's ImpersonatedIdentity metadata is refused", async () => {
  const h = await harness();
  try {
    const { token } = await h.ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
    const res = await createCertificate(
      h.client(),
      {
        csr: (await makeCsr()).csrPem,
        metadata: { [IMPERSONATED_IDENTITY_KEY]: "spiffe://cluster.local/ns/a/sa/b" },
      },
      token,
    );
    assert.ok(isError(res));
    assert.equal(res.code, grpc.status.UNAUTHENTICATED);
    assert.deepEqual(h.counts, { csr: 1, authFailure: 1 });
    assert.deepEqual(h.reasons, [`impersonation is not supported: ${NODE_AUTHENTICATION_ABSENT}`]);
  } finally {
    await h.close();
  }
});
