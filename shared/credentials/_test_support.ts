/**
 * Test certificates made with openssl exactly as Istio's "Secure Gateways" task makes them: a root
 * `example.com` CA, server certificates for hosts under it, and a client certificate.
 *
 * @module
 */

/** A PEM certificate and its PEM private key. */
export interface TestCert {
  certPem: string;
  keyPem: string;
}

async function openssl(dir: string, args: string[]): Promise<void> {
  const out = await new Deno.Command("openssl", { args, cwd: dir, stdout: "null", stderr: "piped" }).output();
  if (!out.success) throw new Error(`openssl ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
}

/** Options of a leaf certificate. */
export interface LeafOptions {
  /** Lifetime; default 365. */
  days?: number;
  /**
   * An X.509 v3 certificate with `subjectAltName=DNS:<cn>`. Without it the leaf is v1, exactly as the
   * task's `openssl x509 -req` makes it (fine for servers; Deno's TLS refuses v1 client certificates).
   */
  v3?: boolean;
  /** With v3: also this URI SAN (e.g. a SPIFFE ID). */
  uri?: string;
}

/**
 * A self-signed root CA (`openssl req -x509 ... -subj /O=<org>/CN=<cn>`), in its own temp dir.
 *
 * @returns the CA and a signer of leaves `leaf(cn, options)` (RSA 2048, SHA-256)
 */
export async function makeTestCa(
  cn = "example.com",
): Promise<{ ca: TestCert; leaf(cn: string, options?: LeafOptions): Promise<TestCert> }> {
  const dir = await Deno.makeTempDir({ prefix: "mesh-test-ca-" });
  const words = (text: string) => text.split(" ");
  await openssl(dir, [
    ...words("req -x509 -sha256 -nodes -days 365 -newkey rsa:2048 -keyout ca.key -out ca.crt -subj"),
    `/O=${cn} Inc./CN=${cn}`,
  ]);
  const ca = {
    certPem: await Deno.readTextFile(`${dir}/ca.crt`),
    keyPem: await Deno.readTextFile(`${dir}/ca.key`),
  };
  let serial = 0;
  return {
    ca,
    async leaf(leafCn, options = {}) {
      const n = serial++;
      await openssl(dir, [
        ...words(`req -out ${n}.csr -newkey rsa:2048 -nodes -keyout ${n}.key -subj`),
        `/CN=${leafCn}/O=${leafCn} organization`,
      ]);
      if (options.v3) {
        const uri = options.uri ? `,URI:${options.uri}` : "";
        await Deno.writeTextFile(`${dir}/${n}.ext`, `subjectAltName=DNS:${leafCn}${uri}\n`);
      }
      await openssl(dir, [
        ...words(`x509 -req -sha256 -days ${options.days ?? 365} -CA ca.crt -CAkey ca.key -set_serial ${n}`),
        ...words(`-in ${n}.csr -out ${n}.crt`),
        ...(options.v3 ? ["-extfile", `${n}.ext`] : []),
      ]);
      return {
        certPem: await Deno.readTextFile(`${dir}/${n}.crt`),
        keyPem: await Deno.readTextFile(`${dir}/${n}.key`),
      };
    },
  };
}

/** Base64 of a text, as a Secret's `data` holds it. */
export function b64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

/** `kubectl create secret tls <name> --key --cert --dry-run=client -o yaml`, as text. */
export function tlsSecretYaml(name: string, namespace: string, cert: TestCert, caPem?: string): string {
  return `apiVersion: v1
kind: Secret
metadata:
  creationTimestamp: null
  name: ${name}
  namespace: ${namespace}
type: kubernetes.io/tls
data:
  tls.crt: ${b64(cert.certPem)}
  tls.key: ${b64(cert.keyPem)}
${caPem === undefined ? "" : `  ca.crt: ${b64(caPem)}\n`}`;
}
