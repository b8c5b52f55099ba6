import assert from "node:assert/strict";
import * as x509 from "@peculiar/x509";
import {
  caProblem,
  describe,
  fingerprint,
  issuedBy,
  parseCertificate,
  uriSans,
  validityProblem,
} from "./certs.ts";
import { makeCa, makeCsr } from "./test_support.ts";

Deno.test("caProblem: CA, not CA, CA without keyCertSign", async () => {
  const root = await makeCa("Root");
  assert.equal(caProblem(root.cert), undefined);
  const leaf = await makeCa("Leaf", { issuer: root, isCa: false });
  assert.match(caProblem(leaf.cert)!, /basic constraints cA is not set/);
  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]);
  const noSign = await x509.X509CertificateGenerator.createSelfSigned({
    name: "CN=x",
    keys,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    ],
  });
  assert.match(caProblem(noSign)!, /lacks keyCertSign/);
});

Deno.test("validityProblem: before, during, after", async () => {
  const c = (await makeCa("T", { notBefore: new Date(1000_000), notAfter: new Date(2000_000) })).cert;
  assert.match(validityProblem(c, new Date(500_000))!, /is not valid before 1970-01-01T00:16:40.000Z/);
  assert.equal(validityProblem(c, new Date(1500_000)), undefined);
  assert.match(validityProblem(c, new Date(2500_000))!, /expired on 1970-01-01T00:33:20.000Z/);
});

Deno.test("issuedBy: name and signature must both match", async () => {
  const root = await makeCa("Root");
  const twin = await makeCa("Root"); // same name, other key
  const child = await makeCa("Child", { issuer: root });
  assert.equal(await issuedBy(child.cert, root.cert), true);
  assert.equal(await issuedBy(child.cert, twin.cert), false);
  assert.equal(await issuedBy(root.cert, child.cert), false);
  assert.equal(await issuedBy(root.cert, root.cert), true);
});

Deno.test("uriSans of certificates and CSRs; describe; fingerprint; parseCertificate errors", async () => {
  const csr = new x509.Pkcs10CertificateRequest(
    (await makeCsr({ uris: ["spiffe://a/ns/b/sa/c"], dnsNames: ["x.y"] })).csrPem,
  );
  assert.deepEqual(uriSans(csr), ["spiffe://a/ns/b/sa/c"]);
  const root = await makeCa("Root");
  assert.deepEqual(uriSans(root.cert), []);
  assert.equal(describe(root.cert), '"CN=Root"');
  assert.match(await fingerprint(root.cert), /^[0-9a-f]{64}$/);
  assert.throws(
    () => parseCertificate(new Uint8Array([1]), "the thing"),
    /the thing is not a valid X.509 certificate/,
  );
});
