import assert from "node:assert/strict";
import * as x509 from "@peculiar/x509";
import * as jose from "jose";
import { Authenticator, type AuthResult } from "./authenticate.ts";
import {
  BOOTSTRAP_TOKEN_TYPE,
  BootstrapTokenIssuer,
  loadOrCreateTokenKey,
} from "../../shared/internal/ca/bootstrap_tokens.ts";
import { issueLeaf } from "./leaf_cert.ts";
import { type LoadedCa, loadRootCa } from "./root_ca.ts";
import { makeCa, makeCsr, pluggedInCa, tempDir } from "./test_support.ts";

const SLEEP = { trustDomain: "cluster.local", namespace: "foo", serviceAccount: "sleep" };
const SLEEP_ID = "spiffe://cluster.local/ns/foo/sa/sleep";

interface Setup {
  ca: LoadedCa;
  issuer: BootstrapTokenIssuer;
  auth: Authenticator;
  cleanup: () => Promise<void>;
  dir: string;
}

async function setup(): Promise<Setup> {
  const { dir, cleanup } = await tempDir();
  await pluggedInCa(dir);
  const ca = await loadRootCa(dir);
  const issuer = await BootstrapTokenIssuer.open(dir, { audiences: ["mesh-ca"] });
  const auth = new Authenticator({
    trustDomain: "cluster.local",
    tokenAudiences: ["mesh-ca", "istio-ca"],
    tokenVerificationKey: issuer.verificationKey,
    issuerCertificatesPem: [ca.bundle.signingCertPem],
  });
  return { ca, issuer, auth, cleanup, dir };
}

function refused(r: AuthResult, reason: RegExp, idExtraction = false): void {
  assert.equal(r.ok, false, JSON.stringify(r));
  if (r.ok) return;
  assert.match(r.reason, reason);
  assert.equal(r.idExtraction, idExtraction, r.reason);
}

async function leafDer(ca: LoadedCa, spiffeId: string, now?: Date): Promise<Uint8Array> {
  const { csrPem } = await makeCsr();
  const [pem] = await issueLeaf(ca, { csrPem, spiffeId, ttlSeconds: 3600, now });
  return new Uint8Array(new x509.X509Certificate(pem).rawData);
}

Deno.test("bearer token: the identity is the token's subject", async () => {
  const s = await setup();
  try {
    const { token } = await s.issuer.issue({ namespace: "foo", serviceAccount: "sleep" });
    assert.deepEqual(await s.auth.authenticate({ authorization: `Bearer ${token}` }), {
      ok: true,
      method: "jwt",
      identity: SLEEP,
    });
    assert.equal(
      (await s.auth.verifyAuthorization(`bearer   ${token}`)).ok,
      true,
      "scheme is case-insensitive",
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test("bearer token: wrong audience, expired, foreign key, wrong type, alg none, wrong issuer are refused", async () => {
  const s = await setup();
  const { dir: otherDir, cleanup } = await tempDir();
  try {
    const key = await loadOrCreateTokenKey(s.dir);
    const kube = new BootstrapTokenIssuer(key, { audiences: ["kubernetes.default.svc"] });
    refused(
      await s.auth.verifyToken((await kube.issue({ namespace: "foo", serviceAccount: "sleep" })).token),
      /claim aud/,
    );
    const old = await s.issuer.issue({
      namespace: "foo",
      serviceAccount: "sleep",
      durationSeconds: 60,
      now: new Date(Date.now() - 3_600_000),
    });
    refused(await s.auth.verifyToken(old.token), /expired/);
    const foreign = await BootstrapTokenIssuer.open(otherDir, { audiences: ["mesh-ca"] });
    refused(
      await s.auth.verifyToken((await foreign.issue({ namespace: "foo", serviceAccount: "sleep" })).token),
      /signature does not verify/,
    );
    const otherIss = new BootstrapTokenIssuer(key, {
      audiences: ["mesh-ca"],
      issuer: "https://kubernetes.default.svc",
    });
    refused(
      await s.auth.verifyToken((await otherIss.issue({ namespace: "foo", serviceAccount: "sleep" })).token),
      /claim iss/,
    );
    // Signed by the right key but not a bootstrap token (e.g. a JWT minted for something else).
    const untyped = await new jose.SignJWT({ sub: "system:serviceaccount:foo:sleep" })
      .setProtectedHeader({ alg: "ES256" })
      .setIssuer("meshd").setAudience("mesh-ca").setIssuedAt().setExpirationTime("1h")
      .sign(key.privateKey);
    refused(await s.auth.verifyToken(untyped), /typ/);
    const none = new jose.UnsecuredJWT({ sub: "system:serviceaccount:foo:sleep" })
      .setIssuer("meshd").setAudience("mesh-ca").setIssuedAt().setExpirationTime("1h").encode();
    refused(await s.auth.verifyToken(none), /algorithm|malformed/);
    refused(await s.auth.verifyAuthorization("Basic dXNlcjpwYXNz"), /not "Bearer <token>"/);
    refused(await s.auth.verifyAuthorization(`Bearer ${"a".repeat(9000)}`), /longer than/);
    refused(await s.auth.verifyToken("not.a.jwt"), /malformed|Invalid/);
  } finally {
    await s.cleanup();
    await cleanup();
  }
});

Deno.test("bearer token: a verified token whose subject is not a service account is an id-extraction error", async () => {
  const s = await setup();
  try {
    const key = await loadOrCreateTokenKey(s.dir);
    const token = await new jose.SignJWT({})
      .setProtectedHeader({ alg: "ES256", typ: BOOTSTRAP_TOKEN_TYPE })
      .setSubject("admin").setIssuer("meshd").setAudience("istio-ca").setIssuedAt().setExpirationTime("1h")
      .sign(key.privateKey);
    refused(await s.auth.verifyToken(token), /subject "admin"/, true);
  } finally {
    await s.cleanup();
  }
});

Deno.test("client certificate: a mesh certificate from this CA authenticates as its SPIFFE ID", async () => {
  const s = await setup();
  try {
    const der = await leafDer(s.ca, SLEEP_ID);
    assert.deepEqual(await s.auth.authenticate({ peerCertificateDer: der }), {
      ok: true,
      method: "mtls",
      identity: SLEEP,
    });
  } finally {
    await s.cleanup();
  }
});

Deno.test("client certificate: foreign, expired, CA, wrong trust domain, no SPIFFE ID are refused", async () => {
  const s = await setup();
  const { dir: otherDir, cleanup } = await tempDir();
  try {
    await pluggedInCa(otherDir);
    const foreign = await loadRootCa(otherDir);
    refused(
      await s.auth.verifyPeerCertificate(await leafDer(foreign, SLEEP_ID)),
      /not issued by this mesh's CA/,
    );
    const expired = await leafDer(s.ca, SLEEP_ID, new Date(Date.now() - 2 * 3_600_000));
    refused(await s.auth.verifyPeerCertificate(expired), /expired/);
    const caCert = await makeCa("Sub CA", {
      issuer: {
        cert: s.ca.signingCert,
        keys: { privateKey: s.ca.signingKey.key } as CryptoKeyPair,
        pem: "",
        keyPem: "",
      },
    });
    refused(await s.auth.verifyPeerCertificate(new Uint8Array(caCert.cert.rawData)), /is a CA certificate/);
    refused(
      await s.auth.verifyPeerCertificate(await leafDer(s.ca, "spiffe://other.domain/ns/foo/sa/sleep")),
      /trust domain other.domain/,
      true,
    );
    const { csrPem } = await makeCsr();
    const [server] = await issueLeaf(s.ca, { csrPem, dnsNames: ["meshd.mesh-system.svc"], ttlSeconds: 60 });
    refused(
      await s.auth.verifyPeerCertificate(new Uint8Array(new x509.X509Certificate(server).rawData)),
      /0 URI SANs/,
      true,
    );
    refused(await s.auth.verifyPeerCertificate(new Uint8Array([1, 2, 3])), /not a valid X.509/);
  } finally {
    await s.cleanup();
    await cleanup();
  }
});

Deno.test("both credentials: the certificate is tried first; a bad certificate falls back to the token", async () => {
  const s = await setup();
  try {
    const cert = await leafDer(s.ca, SLEEP_ID);
    const { token } = await s.issuer.issue({ namespace: "bar", serviceAccount: "httpbin" });
    const r = await s.auth.authenticate({ peerCertificateDer: cert, authorization: `Bearer ${token}` });
    assert.ok(r.ok && r.method === "mtls" && r.identity.namespace === "foo");
    const r2 = await s.auth.authenticate({
      peerCertificateDer: new Uint8Array([0]),
      authorization: `Bearer ${token}`,
    });
    assert.ok(r2.ok && r2.method === "jwt" && r2.identity.namespace === "bar");
    refused(await s.auth.authenticate({}), /no credential/);
    refused(
      await s.auth.authenticate({ peerCertificateDer: new Uint8Array([0]), authorization: "Bearer x" }),
      /certificate: .*; token: /,
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test("bearer token with a TokenReview: bootstrap tokens stay local, every other token is reviewed", async () => {
  const s = await setup();
  try {
    const reviewed: string[] = [];
    const auth = new Authenticator({
      trustDomain: "cluster.local",
      tokenAudiences: ["mesh-ca"],
      tokenVerificationKey: s.issuer.verificationKey,
      issuerCertificatesPem: [s.ca.bundle.signingCertPem],
      reviewToken: (t) => {
        reviewed.push(t);
        return Promise.resolve({ ok: false, reason: "service-account token: reviewed", idExtraction: false });
      },
    });
    const { token } = await s.issuer.issue({ namespace: "foo", serviceAccount: "sleep" });
    assert.deepEqual(await auth.authenticate({ authorization: `Bearer ${token}` }), {
      ok: true,
      method: "jwt",
      identity: SLEEP,
    });
    // A forged "bootstrap" token (another key) is refused by the bootstrap check, never sent for review.
    const key = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign"]);
    const forged = await new jose.SignJWT({ sub: "system:serviceaccount:foo:sleep" })
      .setProtectedHeader({ alg: "ES256", typ: BOOTSTRAP_TOKEN_TYPE })
      .setIssuer("meshd").setAudience("mesh-ca").setIssuedAt().setExpirationTime("1h")
      .sign(key.privateKey);
    refused(
      await auth.authenticate({ authorization: `Bearer ${forged}` }),
      /^token: signature does not verify/,
    );
    assert.deepEqual(reviewed, []);
    const other = await new jose.SignJWT({ sub: "system:serviceaccount:foo:sleep" })
      .setProtectedHeader({ alg: "ES256" }).setAudience("mesh-ca").setExpirationTime("1h").sign(
        key.privateKey,
      );
    refused(
      await auth.authenticate({ authorization: `Bearer ${other}` }),
      /^service-account token: reviewed$/,
    );
    refused(
      await auth.authenticate({ authorization: "Bearer not-a-jwt" }),
      /^service-account token: reviewed$/,
    );
    assert.deepEqual(reviewed, [other, "not-a-jwt"]);
    // Without the Kubernetes API, such a token is checked as a bootstrap token, and fails.
    refused(await s.auth.authenticate({ authorization: `Bearer ${other}` }), /^token: /);
  } finally {
    await s.cleanup();
  }
});
