/**
 * A scripted gRPC server on the project's HTTP/2 codec (server role), plain text or TLS (node:tls with
 * ALPN h2 and client certificates requested), for the agent's transport tests: each stream goes to a
 * handler the test gives, which answers, resets, sends GOAWAY or closes the connection as it likes.
 * Records connections, the GOAWAYs clients sent and the request heads.
 *
 * @module
 */
import * as net from "node:net";
import * as tls from "node:tls";
import { Http2Connection } from "../../shared/internal/http2/connection.ts";
import type { HeaderList } from "../../shared/internal/http2/headers.ts";
import type { Http2Limits } from "../../shared/internal/http2/limits.ts";
import type { Http2Stream } from "../../shared/internal/http2/stream.ts";
import {
  messagePrefix,
  MessageReader,
  percentEncodeGrpcMessage,
} from "../../shared/internal/grpc/messages.ts";

/** What a handler gets: the stream, its connection and socket. */
export interface ScriptedCall {
  stream: Http2Stream;
  connection: Http2Connection;
  socket: net.Socket;
  /** Index of the connection (0 for the first accepted). */
  connectionIndex: number;
}

/** A running scripted server. */
export interface ScriptedServer {
  port: number;
  /** Per connection: whether the client sent a GOAWAY, and whether it has closed. */
  connections: { goaway: boolean; closed: boolean; clientSan: string }[];
  /** Request heads, in arrival order. */
  requests: HeaderList[];
  close(): Promise<void>;
}

/** TLS material of a scripted server: serving certificate and key, and the roots client certificates chain to. */
export interface ScriptedTls {
  certPem: string;
  keyPem: string;
  caPem: string;
}

/** Starts a server on 127.0.0.1 whose streams go to `handler`; `limits` are its codec's (max concurrent streams). */
export async function startScriptedServer(
  handler: (call: ScriptedCall) => void | Promise<void>,
  tlsMaterial?: ScriptedTls,
  limits?: Partial<Http2Limits>,
): Promise<ScriptedServer> {
  const connections: ScriptedServer["connections"] = [];
  const requests: HeaderList[] = [];
  const sockets = new Set<net.Socket>();
  const serve = (socket: net.Socket, clientSan = ""): void => {
    sockets.add(socket);
    const seen = { goaway: false, closed: false, clientSan };
    const connectionIndex = connections.push(seen) - 1;
    socket.on("error", () => {});
    const connection: Http2Connection = new Http2Connection(socket, {
      role: "server",
      limits,
      onGoaway: () => void (seen.goaway = true),
      onStream: (stream) => {
        requests.push(stream.headers);
        void Promise.resolve(handler({ stream, connection, socket, connectionIndex })).catch(() => {});
      },
    });
    socket.once("close", () => {
      seen.closed = true;
      sockets.delete(socket);
    });
  };
  const server: net.Server = tlsMaterial
    ? tls.createServer({
      cert: tlsMaterial.certPem,
      key: tlsMaterial.keyPem,
      ca: tlsMaterial.caPem,
      requestCert: true,
      rejectUnauthorized: false,
      ALPNProtocols: ["h2"],
    }, (s) => serve(s, s.authorized ? s.getPeerCertificate().subjectaltname ?? "" : ""))
    : net.createServer((s) => serve(s));
  server.on("tlsClientError", () => {});
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections,
    requests,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** The response head of a gRPC answer. */
export const GRPC_HEAD: HeaderList = [[":status", "200"], ["content-type", "application/grpc"]];

/** Answers with `messages`, then trailers with `code` and `message` (percent-encoded). */
export async function answer(
  stream: Http2Stream,
  messages: Uint8Array[],
  code: number,
  message = "",
): Promise<void> {
  stream.respond(GRPC_HEAD);
  for (const m of messages) await stream.write(framed(m));
  const trailers: HeaderList = [["grpc-status", String(code)]];
  if (message) trailers.push(["grpc-message", percentEncodeGrpcMessage(message)]);
  stream.end(trailers);
}

/** Reads the request body to its end (or until the stream fails). */
export async function drain(stream: Http2Stream): Promise<void> {
  try {
    for await (const _ of stream);
  } catch {
    // reset: nothing more to read
  }
}

/** `message` with its gRPC prefix (uncompressed), as one buffer. */
export function framed(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length);
  out.set(messagePrefix(message.length));
  out.set(message, 5);
  return out;
}

/** The messages of the request body, read to its end with shared/internal/grpc's reader. */
export async function requestMessages(stream: Http2Stream): Promise<Uint8Array[]> {
  const reader = new MessageReader(1024 * 1024, "");
  const messages: Uint8Array[] = [];
  for await (const chunk of stream) {
    const r = reader.push(chunk);
    if (r.error) throw new Error(r.error.details);
    messages.push(...r.messages);
  }
  return messages;
}
