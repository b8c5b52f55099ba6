import assert from "node:assert/strict";
import * as net from "node:net";
import * as tls from "node:tls";
import { within } from "../../shared/internal/testing/deadline.ts";
import { makeCa, makeLeaf, type TestCa } from "../../shared/internal/testing/test_ca.ts";
import { authorityOf, DialError, dialMeshd } from "./meshd_dial.ts";

const MESHD_NAME = "meshd.mesh-system.svc";

/** A node:tls server with a certificate from `ca`; records the client certificate's SAN of each handshake. */
async function tlsServer(ca: TestCa, opts: { ips?: string[]; alpn?: string[] } = {}) {
  const serving = await makeLeaf(ca, { dnsNames: [MESHD_NAME, "localhost"], ips: opts.ips ?? ["127.0.0.1"] });
  const clients: string[] = [];
  const server = tls.createServer({
    cert: serving.certPem,
    key: serving.keyPem,
    ca: ca.pem,
    requestCert: true,
    rejectUnauthorized: false,
    ...(opts.alpn?.length === 0 ? {} : { ALPNProtocols: opts.alpn ?? ["h2"] }),
  }, (socket) => {
    clients.push(socket.authorized ? socket.getPeerCertificate().subjectaltname ?? "" : "");
    socket.on("error", () => {});
    socket.end();
  });
  server.on("tlsClientError", () => {});
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    clients,
    close: () => new Promise((r) => server.close(r)),
  };
}

async function dialError(p: Promise<net.Socket>): Promise<DialError> {
  const e = await within(p.then((s) => (s.destroy(), undefined), (e) => e), 5000, "the dial");
  assert.ok(e instanceof DialError, `refused, got ${e}`);
  return e;
}

Deno.test("meshd_dial: mutual TLS against the configured roots only, the client certificate presented, ALPN h2", async () => {
  const ca = await makeCa("mesh root");
  const other = await makeCa("another root");
  const client = await makeLeaf(ca, { uris: ["spiffe://cluster.local/ns/foo/sa/sleep"] });
  const server = await tlsServer(ca);
  const clientCertificate = { certChainPem: client.certPem, privateKeyPem: client.keyPem };
  const address = `127.0.0.1:${server.port}`;
  try {
    const socket = await within(dialMeshd({ address, rootsPem: ca.pem, clientCertificate }), 5000, "dial");
    assert.equal((socket as tls.TLSSocket).alpnProtocol, "h2");
    socket.destroy();
    // Another CA's roots: refused by TLS, whatever else the process trusts.
    const wrongCa = await dialError(dialMeshd({ address, rootsPem: other.pem, clientCertificate }));
    assert.equal(wrongCa.tls, true, wrongCa.message);
    // By name: the certificate must carry serverName; dialled by IP, the IP must be an IP SAN.
    const byName = await dialMeshd({ address, rootsPem: ca.pem, serverName: MESHD_NAME, clientCertificate });
    byName.destroy();
    const wrongName = await dialError(
      dialMeshd({ address, rootsPem: ca.pem, serverName: "evil.example.com" }),
    );
    assert.equal(wrongName.tls, true);
    assert.match(wrongName.message, /evil\.example\.com|not in the cert|altnames|NotValidForName/i);
    await within(new Promise((r) => setTimeout(r, 50)), 1000, "the server's record");
    // The wrong name is refused by the client after the server's side of the handshake: "" (no certificate).
    const spiffe = "URI:spiffe://cluster.local/ns/foo/sa/sleep";
    assert.deepEqual(server.clients.filter((c) => c !== ""), [spiffe, spiffe]);
    assert.equal(authorityOf({ address, serverName: MESHD_NAME }), `${MESHD_NAME}:${server.port}`);
    assert.equal(authorityOf({ address }), address);
  } finally {
    await server.close();
  }
});

Deno.test("meshd_dial: dialled by IP, a certificate without that IP SAN is refused", async () => {
  const ca = await makeCa("mesh root");
  const server = await tlsServer(ca, { ips: ["10.9.9.9"] });
  try {
    const e = await dialError(dialMeshd({ address: `127.0.0.1:${server.port}`, rootsPem: ca.pem }));
    assert.equal(e.tls, true);
    assert.match(e.message, /127\.0\.0\.1|IP/);
  } finally {
    await server.close();
  }
});

Deno.test("meshd_dial: a server that selects no ALPN, or another protocol, is refused", async () => {
  const ca = await makeCa("mesh root");
  const server = await tlsServer(ca, { alpn: [] });
  const http1 = await tlsServer(ca, { alpn: ["http/1.1"] });
  try {
    const e = await dialError(dialMeshd({ address: `127.0.0.1:${server.port}`, rootsPem: ca.pem }));
    assert.match(e.message, /selected ALPN none, not h2/);
    // Deno's TLS server ends the handshake itself when no protocol is shared.
    const other = await dialError(dialMeshd({ address: `127.0.0.1:${http1.port}`, rootsPem: ca.pem }));
    assert.match(other.message, /NoApplicationProtocol|not h2/);
  } finally {
    await server.close();
    await http1.close();
  }
});

Deno.test("meshd_dial: plain text is TCP; TLS needs PEM roots; a refused port is not a TLS error", async () => {
  const listener = net.createServer((s) => s.end());
  await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
  const port = (listener.address() as net.AddressInfo).port;
  try {
    const socket = await dialMeshd({ address: `127.0.0.1:${port}`, plaintext: true });
    assert.equal(socket instanceof tls.TLSSocket, false);
    socket.destroy();
    assert.throws(() => dialMeshd({ address: `127.0.0.1:${port}` }), /PEM certificates/);
    assert.throws(() => dialMeshd({ address: "127.0.0.1", plaintext: true }), /no port/);
  } finally {
    await new Promise((r) => listener.close(r));
  }
  const refused = await dialError(
    dialMeshd({ address: `127.0.0.1:${port}`, rootsPem: (await makeCa("r")).pem }),
  );
  assert.equal(refused.tls, false, refused.message);
});
