/**
 * The agent's gRPC transport (proxy/agent/grpc_channel.ts on the HTTP/2 codec, meshd_dial.ts) against
 * meshd's real ADS server and CA over real TLS: a GOAWAY from a grpc-js server with meshd's ADS (its max
 * connection age, as istiod sets MaxConnectionAge) ends the stream and the client comes back on a new
 * connection with its config; meshd's certificate is checked against `serverName`, and a wrong name
 * never reaches meshd; only the configured roots are trusted; keepalive PINGs; no GOAWAY on close.
 * Restart cases: ads_client_test.ts and agent_test.ts; a scripted misbehaving meshd:
 * misbehaving_meshd_test.ts.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import http2 from "node:http2";
import { AdsServer } from "../../../meshd/xds/ads_server.ts";
import type { GeneratedList, ResourceGenerator } from "../../../meshd/xds/ads_types.ts";
import { TYPE_URLS } from "../../../meshd/xds/generators.ts";
import { AdsClient, type AdsClientHooks } from "../../../proxy/agent/ads_client.ts";
import { certificateInfoOf, createCsr } from "../../../proxy/agent/certificate_manager.ts";
import { GrpcCsrClient } from "../../../proxy/agent/csr_client.ts";
import { ADS_MAX_MESSAGE_BYTES } from "../../../proxy/agent/ads_stream.ts";
import { DELTA_ADS_PATH, encodeWire, WIRE_TYPES } from "../../../proxy/agent/ads_wire.ts";
import { GRPC_STATUS, GrpcChannel } from "../../../proxy/agent/grpc_channel.ts";
import type { CertificateAuthority } from "../../../meshd/ca/mod.ts";
import {
  MESHD_NAME,
  ratingsService,
  SERVICE,
  startCa,
  startMeshd,
  startRecordingCa,
  waitFor,
} from "../meshd_support.ts";

const NODE = { ip: "10.1.0.3", name: "sleep-1", namespace: "foo" };
const FAST = { initialMs: 50, maxMs: 200 };

/** One mesh.v1.Service, foo/ratings, and nothing of the other types. */
const ONE_SERVICE: ResourceGenerator = {
  version: () => "v1",
  generate(_node: unknown, typeUrl: string): GeneratedList {
    if (typeUrl !== TYPE_URLS.service) return { resources: [], version: "empty" };
    return { resources: [{ name: "foo/ratings", version: "1", body: ratingsService() }], version: "v1" };
  },
};

/** A workload certificate for foo/sleep from `ca`, through meshd's secure port at `port`. */
async function workloadCertificate(ca: CertificateAuthority, port: number) {
  const { token } = await ca.issueBootstrapToken({ namespace: "foo", serviceAccount: "sleep" });
  const { csrPem, keys } = await createCsr("spiffe://cluster.local/ns/foo/sa/sleep");
  const chain = await new GrpcCsrClient({ address: `127.0.0.1:${port}`, rootsPem: ca.trustBundlePem })
    .createCertificate({ csr: csrPem, validityDuration: 0, metadata: {} }, { token });
  return await certificateInfoOf(chain, keys);
}

Deno.test("GOAWAY: meshd's ADS server ends connections at their max age; the client reconnects and keeps its config", async () => {
  const dir = await Deno.makeTempDir();
  const ca = await startCa(`${dir}/ca`);
  const csrs = await startRecordingCa(ca);
  // meshd's ADS implementation on a grpc-js server that sends a GOAWAY 500 ms into each connection.
  const ads = new AdsServer(ONE_SERVICE);
  const server = new grpc.Server({
    "grpc.max_connection_age_ms": 500,
    "grpc.max_connection_age_grace_ms": 200,
  });
  ads.register(server, "tls");
  const { credentials } = await ca.serverCredentials({ dnsNames: [MESHD_NAME], ipAddresses: ["127.0.0.1"] });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", credentials, (e, p) => (e ? reject(e) : resolve(p)))
  );
  const connects: number[] = [];
  const ends: string[] = [];
  const hooks: AdsClientHooks = {
    onConnect: (s) => connects.push(s),
    onDisconnect: (_s, reason) => ends.push(reason),
  };
  const certificate = await workloadCertificate(ca, csrs.port);
  const client = new AdsClient({
    address: `127.0.0.1:${port}`,
    node: NODE,
    rootsPem: ca.trustBundlePem,
    certificate,
    backoff: FAST,
    hooks,
  });
  try {
    client.start();
    await waitFor(() => "foo/ratings" in client.config.services, 5000, "first config");
    const config = client.config;
    await waitFor(() => connects.length >= 3, 8000, "three connections, each ended by a GOAWAY");
    assert.ok(ends.length >= 2, `ends: ${ends.join("; ")}`);
    assert.equal(client.config, config, "the same config object: nothing dropped or changed");
    assert.deepEqual(client.status().nacked, {});
    await waitFor(() => client.connected, 3000, "connected again");
  } finally {
    await client.stop();
    server.forceShutdown();
    csrs.stop();
    await ca.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("server name: meshd's certificate is checked against serverName; a wrong name never reaches meshd", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/services.yaml`, SERVICE);
  const ca = await startCa(`${dir}/ca`);
  const meshd = await startMeshd(dir, { ca });
  const certificate = await workloadCertificate(ca, meshd.securePort);
  const client = (serverName: string) =>
    new AdsClient({
      address: `127.0.0.1:${meshd.securePort}`,
      node: NODE,
      rootsPem: ca.trustBundlePem,
      serverName,
      certificate,
      backoff: FAST,
    });
  const wrong = client("evil.example.com");
  const right = client(MESHD_NAME);
  try {
    wrong.start();
    await waitFor(() => wrong.status().failures >= 2, 5000, "failures");
    assert.match(wrong.status().lastError ?? "", /UNAVAILABLE: .*evil\.example\.com/);
    assert.equal(meshd.seen.length, 0, "no ADS stream reached meshd");
    right.start();
    await waitFor(() => "foo/httpbin" in right.config.services, 5000, "config by name");
    assert.equal(meshd.seen.length, 1);
    assert.equal(meshd.seen[0].denied, undefined);
  } finally {
    await wrong.stop();
    await right.stop();
    await meshd.stop();
    await ca.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/** A TCP relay to `port` whose connections can be frozen: bytes stop flowing, no socket is closed. */
function freezableRelay(port: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const state = { frozen: false };
  const copy = async (from: Deno.Conn, to: Deno.Conn) => {
    const buf = new Uint8Array(65536);
    while (true) {
      const n = await from.read(buf);
      if (n === null || state.frozen) return; // frozen: bytes are dropped, nothing is closed or answered
      for (let at = 0; at < n;) at += await to.write(buf.subarray(at, n));
    }
  };
  const serving = (async () => {
    for await (const conn of listener) {
      const up = await Deno.connect({ hostname: "127.0.0.1", port });
      open.add(conn).add(up);
      void Promise.all([copy(conn, up), copy(up, conn)]).catch(() => {});
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    state,
    async close() {
      listener.close();
      for (const c of open) c.close();
      await serving;
    },
  };
}

Deno.test("keepalive: a connection that stops answering (no FIN) ends the stream; the client moves to the next meshd", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/services.yaml`, SERVICE);
  const meshd = await startMeshd(dir);
  const relay = freezableRelay(meshd.grpcPort);
  const direct = `127.0.0.1:${meshd.grpcPort}`;
  const ends: string[] = [];
  const client = new AdsClient({
    address: `127.0.0.1:${relay.port},${direct}`,
    node: NODE,
    plaintext: true,
    backoff: FAST,
    keepaliveMs: 200,
    keepaliveTimeoutMs: 300,
    hooks: { onDisconnect: (_s, reason) => ends.push(reason) },
  });
  try {
    client.start();
    await waitFor(
      () => "foo/httpbin" in client.config.services && client.connected,
      5000,
      "config via the relay",
    );
    await new Promise((r) => setTimeout(r, 600));
    assert.deepEqual(ends, [], "probes answered: the stream stays");
    const config = client.config;
    relay.state.frozen = true;
    await waitFor(
      () => client.status().address === direct && client.connected,
      5000,
      "moved to the next meshd",
    );
    assert.match(ends[0], /^UNAVAILABLE: keepalive: DEADLINE_EXCEEDED/);
    // The same services throughout (meshd may send a new system version when a proxy connects, as
    // failover_test.ts sees too, so the config object itself may be new).
    assert.deepEqual(client.config.services, config.services, "the services are kept");
  } finally {
    await client.stop();
    await relay.close();
    await meshd.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("keepalive, one address: the connection that stopped answering is dropped; the next stream dials a new one", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/services.yaml`, SERVICE);
  const meshd = await startMeshd(dir);
  const relay = freezableRelay(meshd.grpcPort);
  const ends: string[] = [];
  let connects = 0;
  const client = new AdsClient({
    address: `127.0.0.1:${relay.port}`,
    node: NODE,
    plaintext: true,
    backoff: FAST,
    keepaliveMs: 200,
    keepaliveTimeoutMs: 300,
    hooks: { onDisconnect: (_s, reason) => ends.push(reason), onConnect: () => connects++ },
  });
  try {
    client.start();
    await waitFor(() => connects === 1, 5000, "config via the relay");
    relay.state.frozen = true; // the relayed connection is dead from now on: bytes dropped, nothing closed
    await waitFor(() => ends.length >= 1, 5000, "the keepalive's end");
    assert.match(ends[0], /^UNAVAILABLE: keepalive: DEADLINE_EXCEEDED/);
    relay.state.frozen = false; // new relayed connections work again; the old one stays dead
    await waitFor(() => connects === 2 && client.connected, 5000, "answered on a new connection");
    assert.ok("foo/httpbin" in client.config.services);
  } finally {
    await client.stop();
    await relay.close();
    await meshd.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("roots: a meshd whose certificate chains to a root of the process's default store, not to root-cert.pem, is refused", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/services.yaml`, SERVICE);
  const mesh = await startCa(`${dir}/mesh`);
  const other = await startCa(`${dir}/other`);
  // The impostor's root is in the child's default store: DENO_TLS_CA_STORE=system reads SSL_CERT_FILE.
  // Deno's fetch would trust it on top of caCerts; the agent's TLS (node:tls `ca`, meshd_dial.ts) must not.
  const impostor = await startMeshd(dir, { ca: other });
  const client = await mesh.issueServingCertificate({ dnsNames: ["client"] });
  await Deno.writeTextFile(`${dir}/store.pem`, other.trustBundlePem);
  const code = `
    const { AdsClient } = await import(${
    JSON.stringify(new URL("../../../proxy/agent/ads_client.ts", import.meta.url).href)
  });
    const client = new AdsClient({
      address: "127.0.0.1:${impostor.securePort}",
      node: { ip: "10.1.0.3", name: "sleep-1", namespace: "foo" },
      rootsPem: ${JSON.stringify(mesh.trustBundlePem)},
      certificate: { certChainPem: ${JSON.stringify(client.certChainPem)}, privateKeyPem: ${
    JSON.stringify(client.privateKeyPem)
  } },
      backoff: { initialMs: 100, maxMs: 200 },
    });
    // Control: the default store of this process does trust the impostor (else the test proves nothing).
    let control = "trusted";
    try {
      const c = await Deno.connectTls({ hostname: "localhost", port: ${impostor.securePort}, alpnProtocols: ["h2"] });
      await c.handshake();
      c.close();
    } catch (e) {
      control = String(e);
    }
    console.log(JSON.stringify({ control }));
    client.start();
    await new Promise((r) => setTimeout(r, 1500));
    console.log(JSON.stringify(client.status()));
    Deno.exit(0);`;
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--ext=ts", code],
      env: { DENO_TLS_CA_STORE: "system", SSL_CERT_FILE: `${dir}/store.pem` },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
    const control = JSON.parse(lines.find((l) => l.startsWith('{"control"')) ?? "{}").control;
    assert.equal(control, "trusted", "Deno.connectTls without caCerts accepts the impostor in the child");
    const status = JSON.parse(lines.at(-1) ?? "{}");
    assert.equal(status.connected, false, new TextDecoder().decode(out.stderr));
    assert.match(status.lastError, /^UNAVAILABLE: cannot reach .*TLS: /);
    assert.equal(impostor.seen.length, 0, "no ADS stream reached the impostor");
  } finally {
    await impostor.stop();
    await mesh.stop();
    await other.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("closing a TLS channel sends meshd no GOAWAY: its socket is destroyed (denoland/deno#36788)", async () => {
  const dir = await Deno.makeTempDir();
  const ca = await startCa(`${dir}/ca`);
  const serving = await ca.issueServingCertificate({ dnsNames: [MESHD_NAME], ipAddresses: ["127.0.0.1"] });
  // An HTTP/2 server that answers CreateCertificate trailers-only (UNAUTHENTICATED) and records, per
  // session, whether a GOAWAY arrived before the connection ended.
  const sessions: { goaway: boolean; closed: boolean }[] = [];
  const server = http2.createSecureServer({
    cert: serving.certChainPem,
    key: serving.privateKeyPem,
    ca: ca.trustBundlePem,
    requestCert: true,
    rejectUnauthorized: false,
  });
  server.on("session", (session) => {
    const seen = { goaway: false, closed: false };
    sessions.push(seen);
    session.on("goaway", () => void (seen.goaway = true));
    session.on("close", () => void (seen.closed = true));
  });
  server.on("stream", (stream: http2.ServerHttp2Stream) => {
    stream.respond({
      ":status": 200,
      "content-type": "application/grpc",
      "grpc-status": "16",
      "grpc-message": "no",
    }, {
      endStream: true,
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  const client = new GrpcCsrClient({
    address: `127.0.0.1:${port}`,
    rootsPem: ca.trustBundlePem,
    timeoutMs: 3000,
  });
  try {
    for (let i = 0; i < 20; i++) {
      const e = await client.createCertificate({ csr: "x", validityDuration: 0, metadata: {} }, {
        token: "t",
      })
        .catch((e) => e);
      assert.equal(e.code, 16, String(e));
    }
    await waitFor(
      () => sessions.length === 20 && sessions.every((s) => s.closed),
      5000,
      "every session closed",
    );
    assert.deepEqual(sessions.filter((s) => s.goaway).length, 0, "no session received a GOAWAY");
  } finally {
    await new Promise((r) => server.close(r));
    await ca.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a real meshd's status reaches the agent when it ends an ADS stream the agent has not half-closed (trailers, then RST_STREAM NO_ERROR)", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/services.yaml`, SERVICE);
  const meshd = await startMeshd(dir);
  try {
    for (let round = 0; round < 5; round++) {
      const channel = new GrpcChannel({
        address: `127.0.0.1:${meshd.grpcPort}`,
        plaintext: true,
        maxMessageBytes: ADS_MAX_MESSAGE_BYTES,
      });
      try {
        let got = 0;
        const call = channel.call(DELTA_ADS_PATH, () => got++);
        call.write(encodeWire(WIRE_TYPES.deltaRequest, {
          node: { id: "sidecar~10.1.0.3~sleep-1.foo~foo.svc.cluster.local" },
          typeUrl: TYPE_URLS.service,
          resourceNamesSubscribe: ["*"],
        }));
        // Right behind it, a message that is not a DeltaDiscoveryRequest; the call is never half-closed.
        call.write(new Uint8Array([0xff, 0xff, 0xff, 0xff]));
        const status = await call.status;
        assert.equal(got, 1, `round ${round}`);
        assert.equal(status.code, GRPC_STATUS.INTERNAL, `round ${round}: ${status.details}`);
        assert.doesNotMatch(status.details, /reset by the peer/, `round ${round}: meshd's own status`);
      } finally {
        channel.close();
      }
    }
  } finally {
    await meshd.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
