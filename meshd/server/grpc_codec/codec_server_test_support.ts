/**
 * A {@link CodecServer} with a test service (unary `Echo` that answers with the caller's verified
 * certificate SAN, bidirectional `Chat` that echoes each message), its TLS material, and grpc-js
 * clients for it. Used by codec_server_test.ts and hostile_test.ts.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { StaticCertificateProvider } from "../../ca/server_credentials.ts";
import { makeCa, makeLeaf, type TestCa, type TestLeaf } from "../../../shared/internal/testing/test_ca.ts";
import { BridgeServer } from "../serving/bridge.ts";
import type { ChildServerOptions } from "../serving/wire.ts";
import { CodecServer } from "./codec_server.ts";

const raw = (b: Buffer) => b;

/** The test service: raw bytes in and out. */
export const TEST_SERVICE: grpc.ServiceDefinition = {
  Echo: {
    path: "/test.T/Echo",
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
  Chat: {
    path: "/test.T/Chat",
    requestStream: true,
    responseStream: true,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
};

/** What the handlers saw. */
export interface Seen {
  /** Per Echo call: the SAN of the verified client certificate ("" without one), and the metadata `x-test`. */
  echo: { san: string; xTest: string }[];
  /** Chat calls that ended by the client going away. */
  chatCancelled: number;
}

/** A running server and its material. */
export interface TestServer {
  server: CodecServer;
  ports: { plaintext: number; tls: number };
  seen: Seen;
  ca: TestCa;
  client: TestLeaf;
  certs: StaticCertificateProvider;
  close(): Promise<void>;
}

/** Starts a codec server on 127.0.0.1 with both listeners. */
export async function startTestServer(options: Partial<ChildServerOptions> = {}): Promise<TestServer> {
  const ca = await makeCa("codec test CA");
  const serving = await makeLeaf(ca, { dnsNames: ["localhost"], ips: ["127.0.0.1"] });
  const client = await makeLeaf(ca, { uris: ["spiffe://cluster.local/ns/foo/sa/sleep"] });
  const seen: Seen = { echo: [], chatCancelled: 0 };
  const certs = new StaticCertificateProvider({
    certChainPem: serving.certPem,
    privateKeyPem: serving.keyPem,
    trustBundlePem: ca.pem,
  });
  const servers = { plaintext: new BridgeServer(), tls: new BridgeServer() };
  for (const s of Object.values(servers)) {
    s.addService(TEST_SERVICE, {
      Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        const san = call.getAuthContext().sslPeerCertificate?.subjectaltname ?? "";
        seen.echo.push({ san, xTest: String(call.metadata.get("x-test")[0] ?? "") });
        cb(null, Buffer.concat([Buffer.from(`${san}|`), call.request]));
      },
      Chat: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        call.on("data", (m: Buffer) => call.write(m));
        call.on("end", () => call.end());
        call.on("cancelled", () => seen.chatCancelled++);
      },
    });
  }
  const server = new CodecServer({
    listen: { plaintext: { hostname: "127.0.0.1", port: 0 }, tls: { hostname: "127.0.0.1", port: 0 } },
    servers,
    serverOptions: {
      maxStreams: 100,
      maxRecvMessageBytes: 64 * 1024,
      keepaliveIntervalMs: 30_000,
      keepaliveTimeoutMs: 10_000,
      ...options,
    },
    certificates: certs,
  });
  const ports = await server.start();
  return { server, ports, seen, ca, client, certs, close: () => server.stop(0) };
}

/** A grpc-js client of the plain-text port, or of the TLS port with `tls` credentials. */
export function testClient(
  port: number,
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
): grpc.Client {
  // Node's TLS refuses an IP address as the server name: the serving certificate also names localhost.
  return new grpc.Client(`127.0.0.1:${port}`, credentials, { "grpc.ssl_target_name_override": "localhost" });
}

/** A unary call of `path` with raw bytes; resolves with the answer or rejects with the ServiceError. */
export function unary(
  client: grpc.Client,
  path: string,
  request: Uint8Array,
  metadata = new grpc.Metadata(),
): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(
      path,
      raw,
      raw,
      Buffer.from(request),
      metadata,
      (e, r) => (e ? reject(e) : resolve(r!)),
    )
  );
}
