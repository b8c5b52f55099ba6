import assert from "node:assert/strict";
import { createCsr } from "../../../proxy/agent/certificate_manager.ts";
import { CsrError, GrpcCsrClient } from "../../../proxy/agent/csr_client.ts";
import { MESHD_NAME, startCa, startRecordingCa } from "../meshd_support.ts";

// Sanitizers on: the client talks gRPC on the HTTP/2 codec and destroys its connection after every call
// (grpc-js, which left reconnect timers running past close(), is gone from the proxy).
const grpcTest = (name: string, fn: () => Promise<void>) => Deno.test({ name, fn });

grpcTest(
  "GrpcCsrClient: meshd verified by IP SAN or by name; wrong names, wrong roots and bad tokens fail clearly",
  async () => {
    const dir = await Deno.makeTempDir();
    const ca = await startCa(`${dir}/ca`);
    const other = await startCa(`${dir}/other`);
    const rec = await startRecordingCa(ca);
    try {
      const { token } = await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
      const { csrPem } = await createCsr("spiffe://cluster.local/ns/foo/sa/sleep");
      const request = { csr: csrPem, validityDuration: 0, metadata: {} };
      const client = (o: { host?: string; serverName?: string; rootsPem?: string } = {}) =>
        new GrpcCsrClient({
          address: `${o.host ?? "127.0.0.1"}:${rec.port}`,
          rootsPem: o.rootsPem ?? ca.trustBundlePem,
          serverName: o.serverName,
          timeoutMs: 3000,
        });

      const byIp = await client().createCertificate(request, { token });
      assert.equal(byIp.length, 2, "leaf and root");
      const byName = await client({ serverName: MESHD_NAME }).createCertificate(request, { token });
      assert.equal(byName.length, 2);

      const failure = async (p: Promise<unknown>): Promise<CsrError> => {
        try {
          await p;
        } catch (e) {
          assert.ok(e instanceof CsrError, String(e));
          return e;
        }
        throw new Error("expected a failure");
      };
      const wrongName = await failure(
        client({ serverName: "evil.example.com" }).createCertificate(request, { token }),
      );
      assert.equal(wrongName.code, 14);
      assert.match(wrongName.message, /evil.example.com/);
      const wrongRoots = await failure(
        client({ rootsPem: other.trustBundlePem }).createCertificate(request, { token }),
      );
      assert.equal(wrongRoots.code, 14);
      const badToken = await failure(
        client().createCertificate(request, { token: token.slice(0, -4) + "AAAA" }),
      );
      assert.equal(badToken.code, 16);
      assert.equal(badToken.message, "request authenticate failure");
      assert.equal(rec.seen.length, 3, "the TLS failures never reached the CA");
    } finally {
      rec.stop();
      await ca.stop();
      await other.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
