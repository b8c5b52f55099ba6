import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import tls from "node:tls";
import { issueLeaf } from "./leaf_cert.ts";
import { createSelfSignedRootCa, type LoadedCa, loadRootCa } from "./root_ca.ts";
import {
  meshServerCredentials,
  type ServingMaterial,
  StaticCertificateProvider,
} from "./server_credentials.ts";
import { bind, makeCsr, SERVER_NAME, tempDir } from "./test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

async function serving(ca: LoadedCa, spiffeIdForClient?: string): Promise<ServingMaterial> {
  const csr = await makeCsr();
  const chain = spiffeIdForClient
    ? await issueLeaf(ca, { csrPem: csr.csrPem, spiffeId: spiffeIdForClient, ttlSeconds: 600 })
    : await issueLeaf(ca, { csrPem: csr.csrPem, dnsNames: [SERVER_NAME], ttlSeconds: 600 });
  return {
    certChainPem: chain.slice(0, -1).join(""),
    privateKeyPem: csr.privateKeyPem,
    trustBundlePem: ca.bundle.rootCertPem,
  };
}

/** Handshakes with node:tls (ALPN h2, as gRPC) and returns what the two sides saw. */
function handshake(
  port: number,
  ca: string,
  client?: { cert: string; key: string },
): Promise<{ ok: boolean; serverSerial?: string; error?: string }> {
  return within(
    new Promise((resolve) => {
      const s = tls.connect({
        host: "127.0.0.1",
        port,
        ca,
        servername: SERVER_NAME,
        ALPNProtocols: ["h2"],
        ...client,
      }, () => {
        const serverSerial = s.getPeerCertificate().serialNumber;
        s.destroy();
        resolve({ ok: true, serverSerial });
      });
      s.on("error", (e) => resolve({ ok: false, error: e.message }));
    }),
    5000,
    "the TLS handshake",
  );
}

Deno.test({
  name:
    "meshServerCredentials: TLS without a client certificate, with one, and a rotated serving certificate",
  fn: async () => {
    const { dir, cleanup } = await tempDir();
    await createSelfSignedRootCa(dir, { trustDomain: "cluster.local", rsaKeySize: 2048, ttlMs: 86_400_000 });
    const ca = await loadRootCa(dir);
    const provider = new StaticCertificateProvider(await serving(ca));
    const server = new grpc.Server();
    try {
      const port = await bind(server, meshServerCredentials(provider));
      const first = await handshake(port, ca.bundle.rootCertPem);
      assert.ok(first.ok, String(first.error));
      const client = await serving(ca, "spiffe://cluster.local/ns/foo/sa/sleep");
      const mtls = await handshake(port, ca.bundle.rootCertPem, {
        cert: client.certChainPem,
        key: client.privateKeyPem,
      });
      assert.ok(mtls.ok, String(mtls.error));

      provider.update(await serving(ca));
      await new Promise((r) => setTimeout(r, 10));
      const rotated = await handshake(port, ca.bundle.rootCertPem);
      assert.ok(rotated.ok, String(rotated.error));
      assert.notEqual(rotated.serverSerial, first.serverSerial, "new connections see the new certificate");
    } finally {
      server.forceShutdown();
      await cleanup();
    }
  },
});
