/**
 * The client side of `mesh.v1.CertificateService/CreateCertificate` (shared/proto/mesh/v1/ca.proto).
 * The request carries the CSR, the requested lifetime and (empty) metadata, nothing else; the
 * caller authenticates with a bootstrap token as `authorization: Bearer <token>` call metadata, or
 * with its current workload certificate over mutual TLS (renewal).
 *
 * Several meshd replicas (`address` a comma-separated list): a request that fails for want of a
 * meshd (UNAVAILABLE, DEADLINE_EXCEEDED: down, unreachable, or not answering in time) is sent to the
 * next address at once, each address once per request; a refusal (any other status) is final. The
 * address that answered last is tried first next time.
 *
 * Transport: gRPC on the project's HTTP/2 codec (grpc_channel.ts), one connection per request, so that
 * each request presents the credentials it is given; the messages are ads_wire.ts's narrow descriptor.
 *
 * @module
 */
import { CREATE_CERTIFICATE_PATH, decodeWire, encodeWire, WIRE_TYPES } from "./ads_wire.ts";
import { GRPC_STATUS, GrpcChannel } from "./grpc_channel.ts";
import { AddressRing } from "./meshd_addresses.ts";
import type { PemCertificate } from "../../shared/internal/tls/meshd_roots.ts";

/** The request, exactly as sent. */
export interface CsrRequest {
  /** PEM PKCS #10. */
  csr: string;
  /** Requested lifetime in seconds; 0 for meshd's default. */
  validityDuration: number;
  /** Request metadata; the agent sends none. */
  metadata: Record<string, string>;
}

/** How the caller proves who it is. */
export interface CsrCredentials {
  /** A bootstrap token, sent as `authorization: Bearer <token>`. */
  token?: string;
  /** The current workload certificate, presented as the TLS client certificate. */
  clientCertificate?: PemCertificate;
}

/** Sends CSRs; the gRPC one is {@link GrpcCsrClient}, tests may use others. */
export interface CsrClient {
  /**
   * Asks for a certificate.
   *
   * @returns PEM certificates: leaf first, root bundle last
   * @throws {CsrError}
   */
  createCertificate(request: CsrRequest, credentials: CsrCredentials): Promise<string[]>;
}

/** A refused or failed CreateCertificate, with the gRPC status code. */
export class CsrError extends Error {
  /** @param code gRPC status code; @param message the server's details */
  constructor(readonly code: number, message: string) {
    super(message);
    this.name = "CsrError";
  }
}

/** Statuses that say no meshd answered at an address, rather than that one refused. */
const MEANS_NO_MESHD: ReadonlySet<number> = new Set([GRPC_STATUS.UNAVAILABLE, GRPC_STATUS.DEADLINE_EXCEEDED]);

/** Options of {@link GrpcCsrClient}. */
export interface GrpcCsrClientOptions {
  /** meshd's secure address, `host:port`, or several (replicas) separated by commas. */
  address: string;
  /** Roots of meshd's serving certificate (read at every request when a function), and the name it must carry. */
  rootsPem: string | (() => string);
  serverName?: string;
  /** Deadline of one request to one address, ms; default 10,000. */
  timeoutMs?: number;
}

/** CreateCertificate over gRPC (on the HTTP/2 codec); one short-lived connection per request, so each uses the credentials given. */
export class GrpcCsrClient implements CsrClient {
  readonly #options: GrpcCsrClientOptions;
  readonly #addresses: AddressRing;

  /** @param options where meshd is and how to verify it */
  constructor(options: GrpcCsrClientOptions) {
    this.#options = options;
    this.#addresses = new AddressRing(options.address);
  }

  async createCertificate(request: CsrRequest, credentials: CsrCredentials): Promise<string[]> {
    const errors: CsrError[] = [];
    for (const _ of this.#addresses.addresses) {
      const address = this.#addresses.current;
      try {
        return await this.#createAt(address, request, credentials);
      } catch (e) {
        const single = this.#addresses.addresses.length === 1;
        if (single || !(e instanceof CsrError) || !MEANS_NO_MESHD.has(e.code)) throw e;
        errors.push(new CsrError(e.code, `${address}: ${e.message}`));
        this.#addresses.failed(address);
      }
    }
    throw new CsrError(
      GRPC_STATUS.UNAVAILABLE,
      `no meshd answered: ${errors.map((e) => e.message).join("; ")}`,
    );
  }

  async #createAt(address: string, request: CsrRequest, credentials: CsrCredentials): Promise<string[]> {
    let channel: GrpcChannel;
    try {
      channel = new GrpcChannel({
        address,
        rootsPem: typeof this.#options.rootsPem === "function"
          ? this.#options.rootsPem()
          : this.#options.rootsPem,
        serverName: this.#options.serverName,
        clientCertificate: credentials.clientCertificate,
      });
    } catch (e) {
      throw new CsrError(GRPC_STATUS.INVALID_ARGUMENT, (e as Error).message);
    }
    try {
      const headers: Record<string, string> = {};
      if (credentials.token !== undefined) headers.authorization = `Bearer ${credentials.token}`;
      const { status, message } = await channel.unary(
        CREATE_CERTIFICATE_PATH,
        encodeWire(WIRE_TYPES.certificateRequest, request),
        { headers, deadlineMs: this.#options.timeoutMs ?? 10_000 },
      );
      if (!message) throw new CsrError(status.code, status.details);
      const chain: string[] = decodeWire(WIRE_TYPES.certificateResponse, message).certChain;
      if (!chain.length) throw new CsrError(GRPC_STATUS.INTERNAL, "empty certificate chain");
      return chain;
    } finally {
      channel.close();
    }
  }
}
