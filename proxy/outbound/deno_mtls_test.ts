/**
 * The mesh leg on Deno's TLS client (./deno_mtls.ts) against real node:tls servers that require a
 * client certificate: the exchange works and the server sees the proxy's identity; secure naming, a
 * foreign CA and, in a child process whose Deno trusts another CA by default (DENO_CERT), a server
 * certificate of that CA carrying the right SPIFFE ID are all refused.
 */
import assert from "node:assert/strict";
import tls from "node:tls";
import { join } from "node:path";
import { certificateInfo, makeCa, makeLeaf, type TestCa, type TestLeaf } from "../inbound/test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";
import { denoMtlsConnect, peerProblem } from "./deno_mtls.ts";
import { DialError, type MtlsTarget } from "./endpoint_pool.ts";
import type { CertificateInfo } from "../runtime/snapshot.ts";

const SERVER_ID = "spiffe://cluster.local/ns/foo/sa/httpbin";
const CLIENT_ID = "spiffe://cluster.local/ns/foo/sa/sleep";
const ALPN = ["istio-http/1.1", "istio", "http/1.1"];

/** A node:tls server that requires a client certificate of `clientCa`, answering with the client's URI SAN. */
async function mtlsServer(
  leaf: TestLeaf,
  clientCa: TestCa,
): Promise<{ port: number; close: () => void }> {
  const sockets: tls.TLSSocket[] = [];
  const server = tls.createServer(
    { cert: leaf.certPem, key: leaf.keyPem, ca: clientCa.pem, requestCert: true, rejectUnauthorized: true },
    (s) => {
      sockets.push(s);
      s.on("error", () => {});
      s.once("data", () => s.end(`${s.getPeerCertificate().subjectaltname}\n`));
    },
  );
  server.on("tlsClientError", () => {});
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as { port: number }).port,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

async function fixture(): Promise<{ ca: TestCa; client: TestLeaf; server: TestLeaf }> {
  const ca = await makeCa("mesh root");
  return {
    ca,
    client: await makeLeaf(ca, { uris: [CLIENT_ID] }),
    server: await makeLeaf(ca, { uris: [SERVER_ID] }),
  };
}

function target(cert: CertificateInfo, port: number, identity: string): MtlsTarget {
  return { host: "127.0.0.1", port, cert, identity, timeoutMs: 5_000, alpn: ALPN };
}

async function dialError(p: Promise<unknown>): Promise<DialError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof DialError) return e;
    throw e;
  }
  throw new Error("the dial succeeded");
}

Deno.test("Deno TLS mesh leg: mutual TLS with the workload certificate, the server's identity checked", async () => {
  const { ca, client, server } = await fixture();
  const srv = await mtlsServer(server, ca);
  try {
    const cert = certificateInfo(client, ca, CLIENT_ID);
    const io = await denoMtlsConnect(target(cert, srv.port, SERVER_ID));
    io.write(new TextEncoder().encode("hello"));
    let text = "";
    for (;;) {
      const c = io.read();
      if (c === undefined) {
        await within(io.wait(), 5_000, "the server's answer");
        continue;
      }
      if (c === null) break;
      text += new TextDecoder().decode(c);
    }
    assert.equal(text, `URI:${CLIENT_ID}\n`);
    io.destroy();
  } finally {
    srv.close();
  }
});

Deno.test("Deno TLS mesh leg: wrong identity, foreign CA and a refused port fail with their kind", async () => {
  const { ca, client, server } = await fixture();
  const foreignCa = await makeCa("foreign root");
  const foreign = await makeLeaf(foreignCa, { uris: [SERVER_ID] });
  const srv = await mtlsServer(server, ca);
  const foreignSrv = await mtlsServer(foreign, ca);
  try {
    const cert = certificateInfo(client, ca, CLIENT_ID);
    const other = "spiffe://cluster.local/ns/foo/sa/other";
    const mismatch = await dialError(denoMtlsConnect(target(cert, srv.port, other)));
    assert.equal(mismatch.kind, "identity_mismatch");
    assert.match(mismatch.message, new RegExp(`expected ${other}, server presented ${SERVER_ID}`));
    const untrusted = await dialError(
      denoMtlsConnect(target(cert, foreignSrv.port, SERVER_ID)),
    );
    assert.equal(untrusted.kind, "tls_failure");
    const closed = foreignSrv.port;
    foreignSrv.close();
    await new Promise((r) => setTimeout(r, 50));
    const refused = await dialError(denoMtlsConnect(target(cert, closed, SERVER_ID)));
    assert.equal(refused.kind, "connect_failure");
  } finally {
    srv.close();
    foreignSrv.close();
  }
});

Deno.test("Deno TLS mesh leg: the checks of a server certificate, one by one", async () => {
  const { ca, client, server } = await fixture();
  const foreign = await makeLeaf(await makeCa("public root"), { uris: [SERVER_ID] });
  const cert = certificateInfo(client, ca, CLIENT_ID);
  const peer = (l: TestLeaf) => ({ raw: l.der, subjectaltname: `URI:${SERVER_ID}` });
  assert.equal(peerProblem(peer(server), cert, SERVER_ID), null);
  assert.equal(peerProblem(peer(server), cert, ""), null, "any SPIFFE ID when none is expected");
  assert.equal(peerProblem(peer(server), cert, CLIENT_ID)?.kind, "identity_mismatch");
  assert.deepEqual(peerProblem(peer(foreign), cert, SERVER_ID), {
    kind: "tls_failure",
    reason: "the server certificate is not issued by the mesh roots",
  });
  assert.equal(peerProblem(null, cert, SERVER_ID)?.kind, "tls_failure", "no certificate to read: refused");
  assert.equal(peerProblem({ subjectaltname: `URI:${SERVER_ID}` }, cert, SERVER_ID)?.kind, "tls_failure");
});

Deno.test("Deno TLS mesh leg: a CA in Deno's default trust store is not a mesh root", async () => {
  // Deno adds caCerts to its default roots; DENO_CERT puts a CA there, as a public CA would be.
  const { ca, client } = await fixture();
  const publicCa = await makeCa("public root");
  const impostor = await makeLeaf(publicCa, { uris: [SERVER_ID] });
  const srv = await mtlsServer(impostor, ca);
  const dir = await Deno.makeTempDir({ prefix: "deno-mtls-" });
  try {
    await Deno.writeTextFile(join(dir, "public.pem"), publicCa.pem);
    await Deno.writeTextFile(join(dir, "cert.json"), JSON.stringify(certificateInfo(client, ca, CLIENT_ID)));
    const module = new URL("./deno_mtls.ts", import.meta.url).href;
    const code = `
      import { denoMtlsConnect } from ${JSON.stringify(module)};
      const cert = JSON.parse(Deno.readTextFileSync(${JSON.stringify(join(dir, "cert.json"))}));
      // Without the mesh-root check rustls accepts this chain (the CA is in the default store).
      const raw = await Deno.connectTls({ hostname: "127.0.0.1", port: ${srv.port},
        caCerts: [cert.rootsPem], cert: cert.certChainPem, key: cert.privateKeyPem,
        unsafelyDisableHostnameVerification: true });
      await raw.handshake();
      raw.close();
      try {
        (await denoMtlsConnect({ host: "127.0.0.1", port: ${srv.port}, cert, identity: ${
      JSON.stringify(SERVER_ID)
    }, timeoutMs: 5000, alpn: [] }))
          .destroy();
        console.log("accepted");
      } catch (e) {
        console.log(e.kind + ": " + e.message);
      }`;
    const out = await within(
      new Deno.Command(Deno.execPath(), {
        args: ["eval", code],
        env: { DENO_CERT: join(dir, "public.pem"), NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output(),
      20_000,
      "the child process",
    );
    const text = new TextDecoder().decode(out.stdout).trim();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.match(text, /^tls_failure: .*not issued by the mesh roots$/);
  } finally {
    srv.close();
    await Deno.remove(dir, { recursive: true });
  }
});
