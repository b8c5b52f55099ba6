/**
 * A serving child of meshd (README.md): the only process that speaks HTTP/2 with clients, so the one
 * that Deno's nghttp2 abort on a GOAWAY (denoland/deno#36788) can take down. It holds no state of its
 * own: it binds gRPC servers on loopback ports for meshd's relay, registers every method path meshd
 * names with pass-through (de)serializers, and forwards each call over its stdin/stdout pipe to meshd,
 * which decodes, answers and holds all config, CA and stream state. Run by pool.ts only.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { StaticCertificateProvider } from "../../ca/server_credentials.ts";
import {
  type ChildServerOptions,
  FrameWriter,
  type FromChild,
  grpcServerOptions,
  type MethodKind,
  readFrames,
  type ToChild,
  type Transport,
} from "./wire.ts";

const out = new FrameWriter(Deno.stdout.writable);

interface OpenCall {
  /** Sends the frame's response or status to the client. */
  deliver(frame: Extract<ToChild, { t: "write" | "end" }>, body: Uint8Array): void;
}

const calls = new Map<number, OpenCall>();
let nextId = 0;

const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
const passThrough = (b: Buffer) => b;

/** The call's metadata as text (base64 for `-bin` keys), and the verified peer certificate if any. */
function describe(call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>) {
  const metadata: Record<string, string[]> = {};
  for (const key of Object.keys(call.metadata.getMap())) {
    metadata[key] = call.metadata.get(key).map((v) => typeof v === "string" ? v : v.toString("base64"));
  }
  const peer = call.getAuthContext?.().sslPeerCertificate;
  const cert = peer?.raw
    ? {
      subjectaltname: peer.subjectaltname ?? "",
      serialNumber: peer.serialNumber ?? "",
      raw: Buffer.from(peer.raw).toString("base64"),
    }
    : undefined;
  return { peer: call.getPeer(), metadata, cert };
}

function gone(id: number): void {
  if (calls.delete(id)) out.send({ t: "gone", id });
}

function unaryHandler(path: string, transport: Transport): grpc.handleUnaryCall<Buffer, Buffer> {
  return (call, callback) => {
    const id = ++nextId;
    calls.set(id, {
      deliver: (frame, body) => {
        calls.delete(id);
        if (frame.t !== "end") return;
        if (frame.code === 0) callback(null, asBuffer(body));
        else {callback(
            { code: frame.code, details: frame.details, metadata: new grpc.Metadata() } as grpc.ServiceError,
          );}
      },
    });
    call.on("cancelled", () => gone(id));
    out.send({ t: "open", id, path, transport, ...describe(call) }, call.request);
  };
}

function bidiHandler(path: string, transport: Transport): grpc.handleBidiStreamingCall<Buffer, Buffer> {
  return (call) => {
    const id = ++nextId;
    let ended = false;
    calls.set(id, {
      deliver: (frame, body) => {
        if (ended) return;
        if (frame.t === "write") {
          call.write(asBuffer(body), () => out.send({ t: "wrote", id }));
          return;
        }
        ended = true;
        calls.delete(id);
        if (frame.code === 0) call.end();
        else call.emit("error", { code: frame.code, details: frame.details });
      },
    });
    out.send({ t: "open", id, path, transport, ...describe(call) });
    call.on("data", (b: Buffer) => out.send({ t: "data", id }, b));
    call.on("end", () => out.send({ t: "halfclose", id }));
    const end = () => {
      ended = true;
      gone(id);
    };
    call.on("error", end);
    call.on("close", end);
    call.on("cancelled", end);
  };
}

function newServer(
  methods: { path: string; kind: MethodKind }[],
  transport: Transport,
  o: ChildServerOptions,
) {
  const server = new grpc.Server(grpcServerOptions(o));
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const [i, m] of methods.entries()) {
    definition[`m${i}`] = {
      path: m.path,
      requestStream: m.kind === "bidi",
      responseStream: m.kind === "bidi",
      requestSerialize: passThrough,
      requestDeserialize: passThrough,
      responseSerialize: passThrough,
      responseDeserialize: passThrough,
    };
    handlers[`m${i}`] = m.kind === "bidi" ? bidiHandler(m.path, transport) : unaryHandler(m.path, transport);
  }
  server.addService(definition, handlers);
  return server;
}

function bind(server: grpc.Server, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", credentials, (e, port) => (e ? reject(e) : resolve(port)))
  );
}

async function main(): Promise<void> {
  let provider: StaticCertificateProvider | undefined;
  for await (const { header, body } of readFrames<ToChild>(Deno.stdin.readable)) {
    switch (header.t) {
      case "init": {
        const plain = newServer(header.methods.plaintext, "plaintext", header.options);
        const ports = { plaintext: await bind(plain, grpc.ServerCredentials.createInsecure()), tls: 0 };
        if (header.tls) {
          provider = new StaticCertificateProvider(header.tls);
          const secure = newServer(header.methods.tls, "tls", header.options);
          ports.tls = await bind(
            secure,
            grpc.experimental.createCertificateProviderServerCredentials(
              provider,
              provider,
              false,
            ),
          );
        }
        out.send({ t: "ready", ports } satisfies FromChild);
        break;
      }
      case "tls":
        provider?.update(header.tls);
        break;
      case "write":
      case "end":
        calls.get(header.id)?.deliver(header, body);
        break;
    }
  }
  // meshd closed the pipe: it is gone or stopping; the kernel closes the connections.
  Deno.exit(0);
}

await main();
