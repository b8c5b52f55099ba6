import assert from "node:assert/strict";
import { join } from "node:path";
import { writeCertificateFiles } from "./run.ts";

Deno.test("writeCertificateFiles: the three files gRPC's file_watcher reads; the key 0600; replaced whole", async () => {
  const dir = await Deno.makeTempDir({ prefix: "proxyless-files-" });
  try {
    const cert = {
      certChainPem: "CHAIN",
      privateKeyPem: "KEY",
      rootsPem: "ROOTS",
      spiffeId: "",
      notBefore: 0,
      notAfter: 0,
    };
    await writeCertificateFiles(dir, cert);
    await writeCertificateFiles(dir, { ...cert, certChainPem: "CHAIN2" });
    assert.equal(await Deno.readTextFile(join(dir, "cert-chain.pem")), "CHAIN2");
    assert.equal(await Deno.readTextFile(join(dir, "key.pem")), "KEY");
    assert.equal(await Deno.readTextFile(join(dir, "root-cert.pem")), "ROOTS");
    assert.equal((await Deno.stat(join(dir, "key.pem"))).mode! & 0o777, 0o600);
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), [
      "cert-chain.pem",
      "key.pem",
      "root-cert.pem",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
