/**
 * The agent's ADS client against a scripted meshd on the real HTTP/2 codec (server role), plain text and
 * mutual TLS (shared/internal/testing/test_ca.ts): a status in the trailers after the responses (read,
 * not "ended without status"), RST_STREAM, GOAWAY with the connection closed, and a connection closed
 * mid-call. Each time the client reconnects with backoff and keeps the config it held; on TLS the
 * workload certificate is presented on every connection. The CSR client: an answer followed by an
 * error status is an error, a reset is final, a cut-off connection goes to the next replica.
 */
import assert from "node:assert/strict";
import { INTERNAL_ERROR } from "../../../shared/internal/http2/frame.ts";
import { headerValue } from "../../../shared/internal/http2/headers.ts";
import type { Http2Stream } from "../../../shared/internal/http2/stream.ts";
import { MessageReader } from "../../../shared/internal/grpc/messages.ts";
import { makeCa, makeLeaf } from "../../../shared/internal/testing/test_ca.ts";
import { AdsClient } from "../../../proxy/agent/ads_client.ts";
import { createCsr } from "../../../proxy/agent/certificate_manager.ts";
import { CsrError, GrpcCsrClient } from "../../../proxy/agent/csr_client.ts";
import { decodeWire, DELTA_ADS_PATH, encodeWire, WIRE_TYPES } from "../../../proxy/agent/ads_wire.ts";
import {
  answer,
  framed,
  GRPC_HEAD,
  type ScriptedCall,
  startScriptedServer,
} from "../../../proxy/agent/grpc_channel_test_support.ts";
import { SUBSCRIBED } from "../../../proxy/agent/resources.ts";
import { MESHD_NAME, ratingsService, startCa, startRecordingCa, waitFor } from "../meshd_support.ts";

const NODE = { ip: "10.1.0.3", name: "sleep-1", namespace: "foo" };
const SERVICE_URL = SUBSCRIBED.find((s) => s.kind === "service")!.typeUrl;
const RATINGS = ratingsService();

/** The response to a subscription of `typeUrl`: foo/ratings for services, nothing for the others. */
function responseTo(typeUrl: string, nonce: number): Uint8Array {
  const resources = typeUrl === SERVICE_URL
    ? [{ name: "foo/ratings", version: "1", resource: { type_url: typeUrl, value: RATINGS } }]
    : [];
  return encodeWire(WIRE_TYPES.deltaResponse, {
    systemVersionInfo: "v1",
    typeUrl,
    resources,
    nonce: `${nonce}`,
  });
}

/** Answers each subscription of the stream (ACKs are read and ignored) until `after` responses were sent. */
async function serveConfig(stream: Http2Stream, after: () => void): Promise<void> {
  stream.respond(GRPC_HEAD);
  let nonce = 0;
  const reader = new MessageReader(1024 * 1024, "");
  for await (const chunk of stream) {
    for (const message of reader.push(chunk).messages) {
      const request = decodeWire(WIRE_TYPES.deltaRequest, message);
      if (request.resourceNamesSubscribe.length === 0) continue; // an ACK
      await stream.write(framed(responseTo(request.typeUrl, ++nonce)));
      if (nonce === SUBSCRIBED.length) after();
    }
  }
}

/** What each ADS stream does, in order: answer then end with a status, or fail before answering. */
const SCRIPT: ((c: ScriptedCall) => void)[] = [
  (c) =>
    void serveConfig(
      c.stream,
      () => setTimeout(() => c.stream.end([["grpc-status", "13"], ["grpc-message", "bye%21"]]), 50),
    ),
  (c) => c.stream.reset(INTERNAL_ERROR),
  (c) => {
    c.connection.close(); // GOAWAY NO_ERROR with this stream below its last id...
    setTimeout(() => c.socket.destroy(), 30); // ...then the connection is gone
  },
  (c) => c.socket.destroy(),
  (c) => void serveConfig(c.stream, () => {}),
];

for (const secure of [false, true]) {
  Deno.test(`misbehaving meshd (${secure ? "mutual TLS" : "plain text"}): trailers after responses, RST_STREAM, GOAWAY and a closed connection; the client backs off, reconnects and keeps its config`, async () => {
    const ca = await makeCa("mesh root");
    const serving = await makeLeaf(ca, { dnsNames: ["meshd.mesh-system.svc"], ips: ["127.0.0.1"] });
    const workload = await makeLeaf(ca, { uris: ["spiffe://cluster.local/ns/foo/sa/sleep"] });
    let streams = 0;
    const server = await startScriptedServer((c) => {
      if (headerValue(c.stream.headers, ":path") !== DELTA_ADS_PATH) return c.stream.reset(INTERNAL_ERROR);
      SCRIPT[Math.min(streams++, SCRIPT.length - 1)](c);
    }, secure ? { certPem: serving.certPem, keyPem: serving.keyPem, caPem: ca.pem } : undefined);
    const ends: string[] = [];
    const retries: number[] = [];
    const client = new AdsClient({
      address: `127.0.0.1:${server.port}`,
      node: NODE,
      ...(secure
        ? {
          rootsPem: ca.pem,
          certificate: { certChainPem: workload.certPem, privateKeyPem: workload.keyPem },
        }
        : { plaintext: true }),
      backoff: { initialMs: 20, maxMs: 2000, jitter: 0 },
      hooks: {
        onDisconnect: (_s, reason) => ends.push(reason),
        onRetry: (_d, attempt) => retries.push(attempt),
      },
    });
    try {
      client.start();
      await waitFor(() => "foo/ratings" in client.config.services, 5000, "the first config");
      const config = client.config;
      await waitFor(() => streams === SCRIPT.length && client.connected, 8000, "the fifth stream answered");
      assert.equal(ends.length, 4, ends.join("; "));
      assert.equal(ends[0], "INTERNAL: bye!", "the status of the trailers, after the responses");
      assert.match(ends[1], /^INTERNAL: stream \d+ reset by the peer: code 2/);
      assert.match(ends[2], /^UNAVAILABLE: the connection to 127\.0\.0\.1:\d+ ended/);
      assert.match(ends[3], /^UNAVAILABLE: the connection to 127\.0\.0\.1:\d+ ended/);
      // The first response of a stream resets the backoff; the three that failed before answering grow it.
      assert.deepEqual(retries, [1, 2, 3, 4]);
      assert.equal(client.config, config, "the same config object: nothing dropped or replaced");
      // Streams 1 to 3 on the first connection (the trailers and RST_STREAM keep it); the GOAWAY and the
      // close each needed a new one.
      assert.equal(server.connections.length, 3);
      const san = secure ? "URI:spiffe://cluster.local/ns/foo/sa/sleep" : "";
      assert.deepEqual(server.connections.map((c) => c.clientSan), [san, san, san]);
      assert.deepEqual(client.status().nacked, {});
    } finally {
      await client.stop();
      await server.close();
    }
  });
}

Deno.test("misbehaving meshd: a CSR answered and then failed in the trailers, reset, or cut off never counts as a certificate; a cut-off one goes to the next replica", async () => {
  const dir = await Deno.makeTempDir();
  const ca = await startCa(`${dir}/ca`);
  const rec = await startRecordingCa(ca);
  const serving = await ca.issueServingCertificate({ dnsNames: [MESHD_NAME], ipAddresses: ["127.0.0.1"] });
  const chain = encodeWire(WIRE_TYPES.certificateResponse, { certChain: ["not", "used"] });
  const behaviours: Record<string, (c: ScriptedCall) => void> = {
    // With fetch this was a success: the one answer was taken, the trailers were not readable.
    "answer, then UNAUTHENTICATED": (c) => void answer(c.stream, [chain], 16, "token expired"),
    "RST_STREAM": (c) => c.stream.reset(INTERNAL_ERROR),
    "connection closed": (c) => c.socket.destroy(),
  };
  let behaviour = "";
  const server = await startScriptedServer((c) => behaviours[behaviour](c), {
    certPem: serving.certChainPem,
    keyPem: serving.privateKeyPem,
    caPem: ca.trustBundlePem,
  });
  try {
    const { token } = await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
    const { csrPem } = await createCsr("spiffe://cluster.local/ns/foo/sa/sleep");
    const request = { csr: csrPem, validityDuration: 0, metadata: {} };
    const expected: Record<string, [number, RegExp]> = {
      "answer, then UNAUTHENTICATED": [16, /^token expired$/],
      "RST_STREAM": [13, /reset by the peer/],
      "connection closed": [14, /ended/],
    };
    for (const [name, [code, message]] of Object.entries(expected)) {
      behaviour = name;
      const client = new GrpcCsrClient({ address: `127.0.0.1:${server.port}`, rootsPem: ca.trustBundlePem });
      const e = await client.createCertificate(request, { token }).catch((e) => e);
      assert.ok(e instanceof CsrError, `${name}: ${e}`);
      assert.equal(e.code, code, `${name}: ${e.message}`);
      assert.match(e.message, message, name);
    }
    // Cut off at the first replica: the second (meshd's real CA) issues the certificate.
    behaviour = "connection closed";
    const replicas = new GrpcCsrClient({
      address: `127.0.0.1:${server.port},127.0.0.1:${rec.port}`,
      rootsPem: ca.trustBundlePem,
    });
    const issued = await replicas.createCertificate(request, { token });
    assert.equal(issued.length, 2, "leaf and root");
    assert.equal(rec.seen.length, 1);
  } finally {
    await server.close();
    rec.stop();
    await ca.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
