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
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { fileURLToPath } from "node:url";
import { type ChannelSecurity, secureChannel } from "../../shared/internal/tls/meshd_channel.ts";
import { AddressRing } from "./meshd_addresses.ts";

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
  clientCertificate?: { certChainPem: string; privateKeyPem: string };
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

let service: grpc.ServiceClientConstructor | undefined;

/** Statuses that say no meshd answered at an address, rather than that one refused. */
const MEANS_NO_MESHD: ReadonlySet<number> = new Set([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED]);

/** The CertificateService client constructor, loaded from shared/proto once per process. */
export function certificateServiceClient(): grpc.ServiceClientConstructor {
  if (service) return service;
  const file = fileURLToPath(new URL("../../shared/proto/mesh/v1/ca.proto", import.meta.url));
  const definition = protoLoader.loadSync(file, {
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  // deno-lint-ignore no-explicit-any
  service = (grpc.loadPackageDefinition(definition) as any).mesh.v1.CertificateService;
  return service!;
}

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

/** CreateCertificate over gRPC; one short-lived channel per request, so each uses the credentials given. */
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
      grpc.status.UNAVAILABLE,
      `no meshd answered: ${errors.map((e) => e.message).join("; ")}`,
    );
  }

  #createAt(address: string, request: CsrRequest, credentials: CsrCredentials): Promise<string[]> {
    const security: ChannelSecurity = {
      rootsPem: typeof this.#options.rootsPem === "function"
        ? this.#options.rootsPem()
        : this.#options.rootsPem,
      serverName: this.#options.serverName,
      clientCertificate: credentials.clientCertificate,
    };
    const channel = secureChannel(address, security);
    const Client = certificateServiceClient();
    const client = new Client(address, channel.credentials, channel.options);
    const metadata = new grpc.Metadata();
    if (credentials.token !== undefined) metadata.set("authorization", `Bearer ${credentials.token}`);
    const deadline = Date.now() + (this.#options.timeoutMs ?? 10_000);
    return new Promise<string[]>((resolve, reject) => {
      // deno-lint-ignore no-explicit-any
      (client as any).createCertificate(
        request,
        metadata,
        { deadline },
        (err: grpc.ServiceError | null, res: { certChain?: string[] } | undefined) => {
          client.close();
          if (err) reject(new CsrError(err.code ?? grpc.status.UNKNOWN, err.details || err.message));
          else if (!res?.certChain?.length) {
            reject(new CsrError(grpc.status.INTERNAL, "empty certificate chain"));
          } else resolve(res.certChain);
        },
      );
    });
  }
}
