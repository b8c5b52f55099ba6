/**
 * meshd's side of its serving children (README.md): services are registered on a {@link BridgeServer}
 * as on a grpc-js server, and each call a child forwards reaches its handler as a call object with the
 * parts of grpc-js's call that meshd's handlers use (metadata, peer, auth context, events, write,
 * end, a status by an `error` event). Messages are decoded and encoded here with the service's own
 * (de)serializers; the child only moves bytes.
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { EventEmitter } from "node:events";
import { NoncedBytes } from "../../xds/delta_wire.ts";
import type { FromChild, MethodKind, PeerCertificate, ToChild, Transport } from "./wire.ts";

/** What services are registered on: a grpc-js server, or a {@link BridgeServer}. */
export type ServiceRegistrar = Pick<grpc.Server, "addService">;

// deno-lint-ignore no-explicit-any
type AnyDefinition = grpc.MethodDefinition<any, any>;
// deno-lint-ignore no-explicit-any
type AnyHandler = (...args: any[]) => void;

interface Method {
  definition: AnyDefinition;
  handler: AnyHandler;
  kind: MethodKind;
}

/** The services of one listener, by method path. */
export class BridgeServer implements ServiceRegistrar {
  readonly #methods = new Map<string, Method>();

  /**
   * Registers a service as grpc-js's `Server.addService` does.
   *
   * @throws Error for a client- or server-streaming method (meshd has none) or a missing handler
   */
  addService(service: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation): void {
    for (const [name, definition] of Object.entries(service)) {
      const handler = (implementation[name] ?? implementation[definition.originalName ?? ""]) as AnyHandler;
      if (!handler) throw new Error(`${definition.path}: no handler`);
      if (definition.requestStream !== definition.responseStream) {
        throw new Error(`${definition.path}: only unary and bidirectional methods can be served by children`);
      }
      this.#methods.set(definition.path, {
        definition,
        handler,
        kind: definition.requestStream ? "bidi" : "unary",
      });
    }
  }

  /** The paths and kinds, for a child's init frame. */
  methods(): { path: string; kind: MethodKind }[] {
    return [...this.#methods.entries()].map(([path, m]) => ({ path, kind: m.kind }));
  }

  /** The method of a path. */
  method(path: string): Method | undefined {
    return this.#methods.get(path);
  }
}

type PeerCertificateOf<C extends { getAuthContext(): { sslPeerCertificate?: unknown } }> = NonNullable<
  ReturnType<C["getAuthContext"]>["sslPeerCertificate"]
>;

/** A gRPC status as grpc-js takes it from an `error` event or a callback. */
interface Status {
  code: number;
  details?: string;
  message?: string;
}

function isStatus(x: unknown): x is Status {
  return typeof x === "object" && x !== null && typeof (x as Status).code === "number";
}

/**
 * The frame sender of one child (or of the codec server). A response meshd encoded once for many
 * streams comes as {@link NoncedBytes}, for a sender that writes its chunks without joining them.
 */
export type SendToChild = (frame: ToChild, body?: Uint8Array | NoncedBytes) => void;

/** What a call knows of its connection. */
interface CallContext {
  id: number;
  metadata: grpc.Metadata;
  peer: string;
  cert: PeerCertificate | undefined;
  send: SendToChild;
}

/** One call forwarded by a child, as grpc-js's server calls look to meshd's handlers. */
class BridgedCall extends EventEmitter {
  cancelled = false;
  readonly metadata: grpc.Metadata;
  readonly #context: CallContext;
  readonly #serialize: (m: unknown) => Uint8Array;
  readonly #writeCallbacks: ((() => void) | undefined)[] = [];
  #done = false;

  constructor(context: CallContext, serialize: (m: unknown) => Uint8Array) {
    super();
    this.#context = context;
    this.metadata = context.metadata;
    this.#serialize = serialize;
  }

  getPeer(): string {
    return this.#context.peer;
  }

  /** As grpc-js: `{}` unless the TLS handshake verified a client certificate. */
  getAuthContext(): ReturnType<grpc.ServerUnaryCall<unknown, unknown>["getAuthContext"]> {
    const cert = this.#context.cert;
    if (!cert) return {};
    return {
      transportSecurityType: "ssl",
      sslPeerCertificate: {
        subjectaltname: cert.subjectaltname,
        serialNumber: cert.serialNumber,
        raw: Buffer.from(cert.raw, "base64"),
      } as PeerCertificateOf<BridgedCall>,
    };
  }

  write(message: unknown, callback?: () => void): boolean {
    if (this.#done) return false;
    this.#writeCallbacks.push(callback);
    const body = message instanceof NoncedBytes ? message : this.#serialize(message);
    this.#context.send({ t: "write", id: this.#context.id }, body);
    return true;
  }

  end(): void {
    this.#finish(0, "");
  }

  /** An `error` event with a status ends the call with it, as grpc-js's server streams do. */
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === "error" && isStatus(args[0])) {
      this.#finish(args[0].code, args[0].details ?? args[0].message ?? "");
      return this.listenerCount("error") > 0 ? super.emit(event, ...args) : false;
    }
    return super.emit(event, ...args);
  }

  /** Sends the final status; a unary call's OK carries its response. */
  finish(code: number, details: string, body?: Uint8Array): void {
    this.#finish(code, details, body);
  }

  #finish(code: number, details: string, body?: Uint8Array): void {
    if (this.#done) return;
    this.#done = true;
    this.#context.send({ t: "end", id: this.#context.id, code, details }, body);
  }

  /** The child handed a write to HTTP/2. */
  wrote(): void {
    this.#writeCallbacks.shift()?.();
  }

  /** The call is over on the child's side, or the child is gone. */
  gone(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.#done = true;
    super.emit("cancelled", "cancelled");
    super.emit("close");
  }
}

function metadataOf(fields: Record<string, string[]>): grpc.Metadata {
  const m = new grpc.Metadata();
  for (const [key, values] of Object.entries(fields)) {
    for (const v of values) m.add(key, key.endsWith("-bin") ? Buffer.from(v, "base64") : v);
  }
  return m;
}

/**
 * The calls of one child: dispatches its frames to the handlers of `servers`, and ends them all when
 * the child is gone.
 */
export class ChildCalls {
  readonly #servers: Record<Transport, BridgeServer>;
  readonly #send: SendToChild;
  readonly #resolvePeer: (loopbackPeer: string) => string;
  readonly #calls = new Map<
    number,
    { call: BridgedCall; deserialize: (b: Buffer) => unknown; kind: MethodKind }
  >();

  /**
   * @param servers the services of each listener
   * @param send sends a frame to the child
   * @param resolvePeer the client's address behind the relay's loopback connection
   */
  constructor(
    servers: Record<Transport, BridgeServer>,
    send: SendToChild,
    resolvePeer: (loopbackPeer: string) => string,
  ) {
    this.#servers = servers;
    this.#send = send;
    this.#resolvePeer = resolvePeer;
  }

  /** Calls in progress. */
  get size(): number {
    return this.#calls.size;
  }

  /** Unary calls in progress (CSRs): what a graceful shutdown waits for. */
  get unaryInFlight(): number {
    return [...this.#calls.values()].filter((c) => c.kind === "unary").length;
  }

  /** Handles one frame from the child. */
  onFrame(frame: FromChild, body: Uint8Array): void {
    if (frame.t === "ready") return;
    if (frame.t === "open") return this.#open(frame, body);
    const entry = this.#calls.get(frame.id);
    if (!entry) return;
    const { call, deserialize } = entry;
    switch (frame.t) {
      case "data": {
        let message: unknown;
        try {
          // A view, not a copy: the message is decoded into new objects (its strings copied), and
          // nothing keeps the request's bytes.
          message = deserialize(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
        } catch (e) {
          return void call.emit("error", { code: grpc.status.INTERNAL, details: (e as Error).message });
        }
        call.emit("data", message);
        break;
      }
      case "halfclose":
        call.emit("end");
        break;
      case "wrote":
        call.wrote();
        break;
      case "gone":
        this.#calls.delete(frame.id);
        call.gone();
        break;
    }
  }

  /** The child is gone: every call of it ends as cancelled. */
  closeAll(): void {
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    for (const { call } of calls) call.gone();
  }

  #open(frame: Extract<FromChild, { t: "open" }>, body: Uint8Array): void {
    const method = this.#servers[frame.transport].method(frame.path);
    if (!method) {
      return this.#send({ t: "end", id: frame.id, code: grpc.status.UNIMPLEMENTED, details: frame.path });
    }
    const { definition } = method;
    const call = new BridgedCall({
      id: frame.id,
      metadata: metadataOf(frame.metadata),
      peer: this.#resolvePeer(frame.peer),
      cert: frame.cert,
      send: this.#send,
    }, (m) => definition.responseSerialize(m));
    this.#calls.set(frame.id, {
      call,
      deserialize: (b) => definition.requestDeserialize(b),
      kind: method.kind,
    });
    if (method.kind === "bidi") return method.handler(call);
    let request: unknown;
    try {
      request = definition.requestDeserialize(Buffer.from(body));
    } catch (e) {
      this.#calls.delete(frame.id);
      return call.finish(grpc.status.INTERNAL, `Error deserializing request: ${(e as Error).message}`);
    }
    Object.assign(call, { request });
    method.handler(call, (error: Status | null, response?: unknown) => {
      this.#calls.delete(frame.id);
      if (error) return call.finish(error.code ?? grpc.status.UNKNOWN, error.details ?? error.message ?? "");
      call.finish(0, "", definition.responseSerialize(response));
    });
  }
}
