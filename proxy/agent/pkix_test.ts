import assert from "node:assert/strict";
import { commandMissing, requires } from "../../shared/internal/testing/prerequisites.ts";
import { csrDer, parseCertificate, unsignedInteger } from "./pkix.ts";
import { toPem } from "./certificate_manager.ts";

const SPIFFE = "spiffe://cluster.local/ns/foo/sa/sleep";
const opensslMissing = commandMissing("openssl");

async function openssl(args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command("openssl", { args, stdin: "piped", stdout: "piped", stderr: "piped" })
    .spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin ?? ""));
  await writer.close();
  const out = await child.output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`openssl ${args.join(" ")}: ${text}`);
  return text;
}

const newKeys = async (): Promise<CryptoKeyPair> =>
  await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;

Deno.test("unsignedInteger: ECDSA r and s as DER INTEGER contents", () => {
  const rows: [number[], number[]][] = [
    [[0x01, 0x02], [0x01, 0x02]],
    [[0x00, 0x00, 0x7f], [0x7f]],
    [[0x80, 0x01], [0x00, 0x80, 0x01]],
    [[0x00, 0xff], [0x00, 0xff]],
    [[0x00, 0x00], [0x00]],
  ];
  for (const [input, want] of rows) {
    assert.deepEqual([...new Uint8Array(unsignedInteger(new Uint8Array(input)))], want, `${input}`);
  }
});

Deno.test(requires(opensslMissing, {
  name: "csrDer: openssl verifies the signature of 30 CSRs and reads the one URI SAN and the key",
  async fn() {
    for (let i = 0; i < 30; i++) {
      const keys = await newKeys();
      const pem = toPem(await csrDer(SPIFFE, keys), "CERTIFICATE REQUEST");
      const text = await openssl(["req", "-noout", "-text", "-verify"], pem);
      assert.match(text, /verify OK/);
      assert.match(
        text,
        /Subject Alternative Name: *\n *URI:spiffe:\/\/cluster\.local\/ns\/foo\/sa\/sleep\n/,
      );
      assert.match(text, /ecdsa-with-SHA256/);
      const spki = toPem(await crypto.subtle.exportKey("spki", keys.publicKey), "PUBLIC KEY");
      assert.equal(await openssl(["req", "-noout", "-pubkey"], pem), spki);
    }
  },
}));

Deno.test(requires(opensslMissing, {
  name: "parseCertificate: key, every URI SAN, validity and signatures of certificates openssl made",
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const run = (args: string[]) => openssl(args);
      const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
      for (const ca of ["ca", "other"]) {
        await run([
          "req",
          "-x509",
          ...ec,
          "-keyout",
          `${dir}/${ca}.key`,
          "-out",
          `${dir}/${ca}.pem`,
          "-subj",
          `/O=${ca}`,
          "-days",
          "2",
        ]);
      }
      await run(["req", ...ec, "-keyout", `${dir}/leaf.key`, "-out", `${dir}/leaf.csr`, "-subj", "/"]);
      await Deno.writeTextFile(
        `${dir}/ext`,
        `subjectAltName=URI:${SPIFFE}, DNS:a.example, URI:spiffe://x/y\n`,
      );
      await run([
        "x509",
        "-req",
        "-in",
        `${dir}/leaf.csr`,
        "-CA",
        `${dir}/ca.pem`,
        "-CAkey",
        `${dir}/ca.key`,
        "-CAcreateserial",
        "-out",
        `${dir}/leaf.pem`,
        "-days",
        "1",
        "-extfile",
        `${dir}/ext`,
      ]);
      const leaf = parseCertificate(await Deno.readTextFile(`${dir}/leaf.pem`));
      const ca = parseCertificate(await Deno.readTextFile(`${dir}/ca.pem`));
      const other = parseCertificate(await Deno.readTextFile(`${dir}/other.pem`));
      assert.deepEqual(leaf.uris, [SPIFFE, "spiffe://x/y"]);
      assert.deepEqual(ca.uris, []);
      const spki = await run([
        "pkey",
        "-in",
        `${dir}/leaf.key`,
        "-pubout",
        "-outform",
        "DER",
        "-out",
        `${dir}/leaf.spki`,
      ]);
      assert.equal(spki, "");
      assert.deepEqual(leaf.spki, await Deno.readFile(`${dir}/leaf.spki`));
      const dates = await run(["x509", "-in", `${dir}/leaf.pem`, "-noout", "-startdate", "-enddate"]);
      const date = (key: string) => Date.parse(new RegExp(`${key}=(.*)`).exec(dates)![1]);
      assert.equal(leaf.notBefore, date("notBefore"));
      assert.equal(leaf.notAfter, date("notAfter"));
      assert.equal(leaf.signedBy(ca), true);
      assert.equal(leaf.signedBy(other), false, "another CA's key");
      assert.equal(ca.signedBy(leaf), false, "the leaf's key");
      assert.equal(ca.signedBy(ca), true, "self-signed");
      assert.throws(() => parseCertificate("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
