import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import tls from "node:tls";
import { startServingCertificate } from "./maintenance.ts";
import { CertificateAuthority } from "./mod.ts";
import { servingRenewAt } from "./serving_cert.ts";
import { bind, SERVER_NAME, tempDir } from "./test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const HOUR = 3_600_000;

/** A server-streaming test service: `Tick` writes one message every 50 ms until cancelled. */
const TICKER: grpc.ServiceDefinition = {
  tick: {
    path: "/test.Ticker/Tick",
    requestStream: false,
    responseStream: true,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  },
};
const Ticker = grpc.makeGenericClientConstructor(TICKER, "Ticker");

function tickerServer(): grpc.Server {
  const server = new grpc.Server();
  server.addService(TICKER, {
    tick: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const t = setInterval(() => call.write(Buffer.from("tick")), 50);
      call.on("cancelled", () => clearInterval(t));
    },
  });
  return server;
}

/** A new channel (a new TLS handshake) and a Tick stream on it, counting messages and noting its end. */
function openStream(port: number, rootPem: string) {
  const client = new Ticker(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(rootPem)), {
    "grpc.ssl_target_name_override": SERVER_NAME,
    "grpc.default_authority": SERVER_NAME,
  });
  const state = { messages: 0, ended: undefined as string | undefined };
  // deno-lint-ignore no-explicit-any
  const call = (client as any).tick(Buffer.alloc(0)) as grpc.ClientReadableStream<Buffer>;
  call.on("data", () => state.messages++);
  call.on("error", (e: grpc.ServiceError) => (state.ended ??= `error ${e.code}: ${e.details}`));
  call.on("end", () => (state.ended ??= "end"));
  return {
    state,
    close: () => {
      call.cancel();
      client.close();
    },
  };
}

/** A fresh TLS handshake: the serving certificate's serial and NotAfter as a client sees them. */
function handshake(port: number, ca: string): Promise<{ serial: string; validTo: number }> {
  return within(
    new Promise((resolve, reject) => {
      const s = tls.connect(
        { host: "127.0.0.1", port, ca, servername: SERVER_NAME, ALPNProtocols: ["h2"] },
        () => {
          const c = s.getPeerCertificate();
          s.destroy();
          resolve({ serial: c.serialNumber, validTo: Date.parse(c.valid_to) });
        },
      );
      s.on("error", reject);
    }),
    5000,
    "the TLS handshake",
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function recordingLog() {
  const lines: string[] = [];
  return {
    lines,
    log: {
      info: (m: string) => lines.push(`info ${m}`),
      warn: (m: string) => lines.push(`warn ${m}`),
      error: (m: string) => lines.push(`error ${m}`),
    },
  };
}

async function startCa(dir: string, defaultTtlMs: number): Promise<CertificateAuthority> {
  const ca = new CertificateAuthority();
  await ca.start({
    rootCaDir: dir,
    trustDomain: "cluster.local",
    selfSignedRsaKeySize: 2048,
    selfSignedTtlMs: HOUR,
    defaultTtlMs,
    maxTtlMs: HOUR,
    tokenAudiences: "mesh-ca",
  });
  return ca;
}

Deno.test("servingRenewAt: a share of the lifetime measured from issue, never before it", () => {
  assert.equal(servingRenewAt(1000, 61_000), 31_000);
  assert.equal(servingRenewAt(1000, 61_000, 0.8), 49_000);
  assert.equal(servingRenewAt(5000, 4000), 5000, "already expired: now");
});

Deno.test({
  name:
    "serving certificate: a 2 s certificate is renewed; an open stream outlives the first certificate; new clients connect after its expiry",
  fn: async () => {
    const { dir, cleanup } = await tempDir();
    const ca = await startCa(dir, 2000);
    const { lines, log } = recordingLog();
    const serving = await startServingCertificate(
      ca,
      { dnsNames: [SERVER_NAME], ipAddresses: ["127.0.0.1"] },
      log,
    );
    const server = tickerServer();
    const streams: { close(): void }[] = [];
    try {
      const port = await bind(server, serving.renewer.credentials);
      const first = await handshake(port, ca.trustBundlePem);
      const firstNotAfter = serving.renewer.certificate.notAfter.getTime();
      assert.ok(Math.abs(first.validTo - firstNotAfter) < 1000);
      const established = openStream(port, ca.trustBundlePem);
      streams.push(established);
      await sleep(firstNotAfter - Date.now() + 700); // past the first certificate's NotAfter
      const before = established.state.messages;
      await sleep(300);
      assert.equal(established.state.ended, undefined, "the established stream is still open");
      assert.ok(established.state.messages > before, "and still receives messages");

      const later = await handshake(port, ca.trustBundlePem);
      assert.notEqual(later.serial, first.serial, "new handshakes get a renewed certificate");
      assert.ok(later.validTo > Date.now(), "which is valid now");
      const fresh = openStream(port, ca.trustBundlePem);
      streams.push(fresh);
      const deadline = Date.now() + 3000;
      while (fresh.state.messages === 0 && fresh.state.ended === undefined && Date.now() < deadline) {
        await sleep(20);
      }
      assert.ok(fresh.state.messages > 0, `a new client is served (${fresh.state.ended})`);
      assert.ok(lines.filter((l) => l.startsWith("info renewed")).length >= 2, lines.join("\n"));
    } finally {
      for (const s of streams) s.close();
      serving.stop();
      server.forceShutdown();
      await ca.stop();
      await cleanup();
    }
  },
});

Deno.test({
  name:
    "serving certificate: issued again at once when the root rotates; a failed issue keeps the certificate and retries",
  fn: async () => {
    const { dir, cleanup } = await tempDir();
    const ca = await startCa(dir, 60_000);
    const { lines, log } = recordingLog();
    const serving = await startServingCertificate(ca, { dnsNames: [SERVER_NAME], ipAddresses: [] }, log);
    try {
      const first = serving.renewer.certificate;
      const updates: string[] = [];
      serving.renewer.onUpdate((m) => updates.push(m.trustBundlePem));
      await ca.rotateRoot(HOUR);
      const deadline = Date.now() + 3000;
      while (serving.renewer.certificate === first && Date.now() < deadline) await sleep(20);
      assert.notEqual(serving.renewer.certificate, first, "renewed right after the rotation, not at 30 s");
      assert.match(serving.renewer.certificate.certChainPem, /BEGIN CERTIFICATE/);
      assert.deepEqual(updates, [ca.trustBundlePem], "listeners get the new material with both roots");
      assert.equal((updates[0].match(/BEGIN CERTIFICATE/g) ?? []).length, 2);
      assert.equal(serving.renewer.material.certChainPem, serving.renewer.certificate.certChainPem);

      const kept = serving.renewer.certificate;
      await ca.stop(); // every issue fails from now on
      await serving.renewer.renewNow();
      assert.equal(serving.renewer.certificate, kept, "the certificate in force stays");
      assert.match(
        lines.at(-1) ?? "",
        /^error renewing meshd's serving certificate failed: .*retrying in 1000 ms$/,
      );
    } finally {
      serving.stop();
      await ca.stop();
      await cleanup();
    }
  },
});
