/**
 * A dial in progress against a meshd address that accepts TCP and never answers TLS: the connect time,
 * the call's deadline and the channel's close each end it, its socket and timer included (the test
 * sanitizers catch a leaked timer; the server side sees the client's socket close).
 */
import assert from "node:assert/strict";
import * as net from "node:net";
import { within } from "../../shared/internal/testing/deadline.ts";
import { makeCa, makeLeaf } from "../../shared/internal/testing/test_ca.ts";
import { CREATE_CERTIFICATE_PATH, encodeWire, WIRE_TYPES } from "./ads_wire.ts";
import { AdsClient } from "./ads_client.ts";
import { CsrError, GrpcCsrClient } from "./csr_client.ts";
import { GRPC_STATUS, GrpcChannel } from "./grpc_channel.ts";
import { answer, drain, startScriptedServer } from "./grpc_channel_test_support.ts";

/** A TCP server that accepts and never speaks; `gone(i)` resolves when accepted socket `i` closes. */
async function silentServer() {
  const held: net.Socket[] = [];
  const closed: Promise<void>[] = [];
  const server = net.createServer((s) => {
    held.push(s);
    s.on("error", () => {});
    s.resume();
    closed.push(new Promise((r) => s.once("close", () => r())));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    /** Resolves when the client has closed every socket accepted so far (at least one). */
    async allClosed(ms: number, what: string): Promise<void> {
      await within(
        (async () => {
          while (held.length === 0) await new Promise((r) => setTimeout(r, 10));
          await Promise.all(closed);
        })(),
        ms,
        what,
      );
    },
    async close(): Promise<void> {
      for (const s of held) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const ca = await makeCa("dial test root");

Deno.test("grpc_channel dial: a TLS handshake that never comes ends at connectTimeoutMs (UNAVAILABLE), its socket closed", async () => {
  const silent = await silentServer();
  const channel = new GrpcChannel({ address: silent.address, rootsPem: ca.pem, connectTimeoutMs: 200 });
  try {
    const status = await within(channel.call("/t.T/M", () => {}).status, 5000, "status");
    assert.equal(status.code, GRPC_STATUS.UNAVAILABLE, status.details);
    assert.match(status.details, /no connection within 200 ms/);
    await silent.allClosed(2000, "the dial's socket closed");
  } finally {
    channel.close();
    await silent.close();
  }
});

Deno.test("grpc_channel dial: close() during the handshake abandons it (socket and 10 s timer gone)", async () => {
  const silent = await silentServer();
  const channel = new GrpcChannel({ address: silent.address, rootsPem: ca.pem });
  try {
    const call = channel.call("/t.T/M", () => {});
    await new Promise((r) => setTimeout(r, 100));
    channel.close();
    const status = await within(call.status, 2000, "status");
    assert.equal(status.code, GRPC_STATUS.UNAVAILABLE, status.details);
    assert.match(status.details, /abandoned/);
    await silent.allClosed(2000, "the dial's socket closed at close()");
  } finally {
    await silent.close();
  }
});

Deno.test("grpc_channel dial: the call's deadline bounds the connect", async () => {
  const silent = await silentServer();
  const channel = new GrpcChannel({ address: silent.address, rootsPem: ca.pem });
  try {
    const status = await within(channel.call("/t.T/M", () => {}, { deadlineMs: 200 }).status, 5000, "status");
    assert.equal(status.code, GRPC_STATUS.DEADLINE_EXCEEDED, status.details);
    // The channel stays open: the dial itself must give up at the deadline, not after 10 s.
    await silent.allClosed(2000, "the dial's socket closed at the call's deadline");
  } finally {
    channel.close();
    await silent.close();
  }
});

Deno.test("grpc_channel dial: a CSR whose handshake hangs at one address goes to the next, leaving nothing behind", async () => {
  const silent = await silentServer();
  const serving = await makeLeaf(ca, { dnsNames: ["localhost"], ips: ["127.0.0.1"] });
  const meshd = await startScriptedServer(async ({ stream }) => {
    await drain(stream);
    const chain = encodeWire(WIRE_TYPES.certificateResponse, { certChain: ["leaf", "root"] });
    await answer(stream, [chain], 0);
  }, { certPem: serving.certPem, keyPem: serving.keyPem, caPem: ca.pem });
  try {
    const client = new GrpcCsrClient({
      address: `${silent.address},127.0.0.1:${meshd.port}`,
      rootsPem: ca.pem,
      timeoutMs: 300,
    });
    const request = { csr: "x", validityDuration: 0, metadata: {} };
    const chain = await within(client.createCertificate(request, { token: "t" }), 5000, "CSR");
    assert.deepEqual(chain, ["leaf", "root"]);
    assert.equal(meshd.requests.length, 1);
    assert.equal(meshd.requests[0].find(([n]) => n === ":path")?.[1], CREATE_CERTIFICATE_PATH);
    await silent.allClosed(1000, "the first address's socket closed");
    // A single address: the hanging handshake is the request's failure, after its deadline.
    const single = new GrpcCsrClient({ address: silent.address, rootsPem: ca.pem, timeoutMs: 200 });
    const e = await within(single.createCertificate(request, { token: "t" }).catch((e) => e), 5000, "CSR");
    assert.ok(e instanceof CsrError && e.code === GRPC_STATUS.DEADLINE_EXCEEDED, String(e));
    await silent.allClosed(1000, "its socket closed too");
  } finally {
    await meshd.close();
    await silent.close();
  }
});

Deno.test("grpc_channel dial: AdsClient.stop() during a hanging handshake leaves no socket or timer", async () => {
  const silent = await silentServer();
  const leaf = await makeLeaf(ca, { uris: ["spiffe://cluster.local/ns/foo/sa/sleep"] });
  const client = new AdsClient({
    address: silent.address,
    node: { ip: "10.1.0.3", name: "sleep-1", namespace: "foo" },
    rootsPem: ca.pem,
    certificate: { certChainPem: leaf.certPem, privateKeyPem: leaf.keyPem },
    keepaliveMs: 0,
    closeGraceMs: 100,
  });
  try {
    client.start();
    await new Promise((r) => setTimeout(r, 100));
    await within(client.stop(), 5000, "stop");
    await silent.allClosed(2000, "the dial's socket closed at stop()");
  } finally {
    await silent.close();
  }
});
