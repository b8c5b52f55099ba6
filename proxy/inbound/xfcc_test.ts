import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type * as x509 from "@peculiar/x509";
import { certificateFields, certificateHash, formatXfccElement } from "./xfcc.ts";
import { checkPeer, firstPemDer } from "./tls_context.ts";
import { makeCa, makeLeaf } from "./test_support.ts";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";

const ca = await makeCa("Mesh Root CA");

/** What `openssl x509 -nameopt RFC2253` prints for the subject: the reference for Envoy's format. */
async function opensslSubject(der: Uint8Array): Promise<string> {
  const child = new Deno.Command("openssl", {
    args: ["x509", "-inform", "DER", "-noout", "-subject", "-nameopt", "RFC2253"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(der);
  await w.close();
  const out = await child.output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  // openssl prints the escaped bytes of UTF-8 as \XX, like the library call Envoy makes.
  return new TextDecoder().decode(out.stdout).replace(/^subject=/, "").replace(/\n$/, "");
}

Deno.test(requires(commandMissing("openssl"), {
  name: "subjects are formatted as OpenSSL's RFC 2253 printer does (compared with the openssl CLI)",
  async fn(t) {
    const subjects: [string, string | x509.JsonName, string][] = [
      ["empty (Istio workload certificates)", "", ""],
      ["reversed order", "CN=sleep, O=acme, C=DE", "C=DE,O=acme,CN=sleep"],
      ["special characters escaped", [{ CN: ['a,b+c"d<e>f;g=i'] }], 'CN=a\\,b\\+c\\"d\\<e\\>f\\;g=i'],
      ["leading and trailing spaces", [{ CN: [" x "] }], "CN=\\ x\\ "],
      ["UTF-8 as escaped bytes", [{ CN: ["Müller 日本"] }], "CN=M\\C3\\BCller \\E6\\97\\A5\\E6\\9C\\AC"],
      ["multi-valued RDN (reversed inside too)", [{ CN: ["a"], OU: ["b"] }, { O: ["c"] }], "O=c,OU=b+CN=a"],
      ["unknown attribute type as hex DER", [{ "1.2.3.4": ["x"] }, { CN: ["n"] }], ""],
      [
        "mail, DC, UID, serialNumber, L, ST",
        [
          { DC: ["example"] },
          { DC: ["com"] },
          { "0.9.2342.19200300.100.1.1": ["u1"] },
          { "1.2.840.113549.1.9.1": ["a@b.c"] },
          { "2.5.4.5": ["42"] },
          { L: ["Köln"] },
          { ST: ["NRW"] },
        ],
        "",
      ],
    ];
    for (const [name, subject, expected] of subjects) {
      await t.step(name, async () => {
        const leaf = await makeLeaf(ca, { uris: ["spiffe://cluster.local/ns/a/sa/b"], subject });
        const ours = certificateFields(leaf.der).subject;
        assert.equal(ours, await opensslSubject(leaf.der));
        if (expected !== "") assert.equal(ours, expected);
      });
    }
  },
}));

Deno.test("subject alternative names: URIs and DNS names in order", async () => {
  const leaf = await makeLeaf(ca, {
    uris: ["spiffe://cluster.local/ns/a/sa/b", "https://example.com/x"],
    dnsNames: ["a.example", "b.example"],
    ips: ["10.0.0.1"],
  });
  const f = certificateFields(leaf.der);
  assert.deepEqual(f.uris, ["spiffe://cluster.local/ns/a/sa/b", "https://example.com/x"]);
  assert.deepEqual(f.dnsNames, ["a.example", "b.example"]);
});

Deno.test("certificateFields rejects what is not a certificate", () => {
  for (
    const bad of [new Uint8Array(0), new Uint8Array([0x30, 0x82, 0xff]), new Uint8Array([0x04, 0x01, 0x00])]
  ) {
    assert.throws(() => certificateFields(bad));
  }
});

Deno.test("XFCC element: Envoy's order and keys", () => {
  assert.equal(
    formatXfccElement({
      by: ["spiffe://cluster.local/ns/foo/sa/httpbin"],
      hash: "ab",
      subject: "",
      uris: ["spiffe://cluster.local/ns/foo/sa/sleep"],
      dnsNames: [],
    }),
    'By=spiffe://cluster.local/ns/foo/sa/httpbin;Hash=ab;Subject="";URI=spiffe://cluster.local/ns/foo/sa/sleep',
  );
  assert.equal(
    formatXfccElement({ by: [], hash: "cd", subject: "CN=x", uris: [], dnsNames: ["a", "b\r\nX: y"] }),
    'Hash=cd;Subject="CN=x";URI=;DNS=a;DNS=b%0D%0AX: y',
  );
});

Deno.test("checkPeer: trust domain and SPIFFE ID", async () => {
  const by = ["spiffe://cluster.local/ns/foo/sa/httpbin"];
  const good = await makeLeaf(ca, { uris: ["https://x.example/", "spiffe://cluster.local/ns/bar/sa/sleep"] });
  const r = checkPeer(good.der, ["cluster.local"], by);
  assert.ok(r.ok);
  assert.equal(r.spiffeId, "spiffe://cluster.local/ns/bar/sa/sleep");
  assert.equal(
    r.xfccElement,
    `By=${by[0]};Hash=${createHash("sha256").update(good.der).digest("hex")};Subject="";` +
      "URI=https://x.example/;URI=spiffe://cluster.local/ns/bar/sa/sleep",
  );
  assert.equal(certificateHash(good.der), createHash("sha256").update(good.der).digest("hex"));

  const foreign = await makeLeaf(ca, { uris: ["spiffe://other.example/ns/bar/sa/sleep"] });
  const f = checkPeer(foreign.der, ["cluster.local"], by);
  assert.equal(f.ok, false);
  assert.match(!f.ok ? f.reason : "", /other\.example.*cluster\.local/);
  assert.ok(checkPeer(foreign.der, ["cluster.local", "other.example"], by).ok, "an alias trust domain");

  const malformed = await makeLeaf(ca, { uris: ["spiffe://cluster.local/ns/bar"] });
  assert.equal(checkPeer(malformed.der, ["cluster.local"], by).ok, false, "not a workload SPIFFE ID");
  assert.equal(checkPeer(new Uint8Array([1, 2, 3]), ["cluster.local"], by).ok, false);
});

Deno.test("firstPemDer", async () => {
  const leaf = await makeLeaf(ca, { uris: ["spiffe://cluster.local/ns/a/sa/b"] });
  assert.deepEqual(firstPemDer(leaf.certPem + ca.pem), leaf.der);
  assert.equal(firstPemDer("no pem"), null);
});
