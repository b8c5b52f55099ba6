/**
 * Reads meshd's debug pages over xDS, as istioctl does with `--xds-address` (istioctl/pkg/xds and
 * multixds): one ADS stream (StreamAggregatedResources) per page, one DiscoveryRequest with the type
 * URL `istio.io/debug/<page>[?query]`, and the page's body from the one resource of the answer
 * (meshd/server/debug_xds.ts).
 *
 * Transport: mutual TLS towards meshd's --secureGRPCAddr (15012), its certificate verified against
 * the given roots and name, or not at all with `insecure`; or plain text towards --grpcAddr (15010).
 * Credentials: a client certificate of the mesh, or a bearer token (`authorization` metadata), or
 * both. Roots are always explicit, never GRPC_DEFAULT_SSL_ROOTS_FILE_PATH (platform.md).
 *
 * @module
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import * as tls from "node:tls";
import { adsProtocol } from "../shared/internal/xds/envoy_protos.ts";
import { secureChannel } from "../shared/internal/tls/meshd_channel.ts";
import type { MeshdTransportSecurity } from "../shared/internal/tls/meshd_roots.ts";
import type { MeshdDebugSource } from "./meshd_client.ts";

/** Istio's debug type URL. */
const DEBUG_TYPE_URL = "istio.io/debug";

/** How to reach meshd and who to be. */
export interface XdsDebugOptions extends MeshdTransportSecurity {
  /** Per page, ms (the seed's --timeout, 30 s). */
  timeoutMs: number;
  /** The name meshd's certificate must carry (`--authority`); default: the dialled host. */
  authority?: string;
  /** Skip verifying meshd's certificate (`--insecure`). */
  insecure?: boolean;
  /** A bearer token meshd's CA accepts (e.g. from `meshd token`). */
  token?: string;
}

/** The node a debug stream names; meshd does not treat it as a proxy. */
const NODE_ID = "meshctl~0.0.0.0~meshctl~cluster.local";

/** A failed debug request: names the address, the type URL and meshd's reason. */
export class XdsDebugError extends Error {
  /** @param grpcCode the gRPC status; @param message the address, type URL and reason */
  constructor(readonly grpcCode: grpc.status, message: string) {
    super(message);
    this.name = "XdsDebugError";
  }
}

/** The credentials and channel options for `options`. */
function channel(
  address: string,
  options: XdsDebugOptions,
): { creds: grpc.ChannelCredentials; opts: grpc.ChannelOptions } {
  if (options.plaintext) return { creds: grpc.credentials.createInsecure(), opts: {} };
  const cert = options.clientCertificate;
  if (options.insecure) {
    const roots = options.rootsPem ?? tls.rootCertificates.join("\n");
    const creds = grpc.credentials.createSsl(
      Buffer.from(roots),
      cert ? Buffer.from(cert.privateKeyPem) : null,
      cert ? Buffer.from(cert.certChainPem) : null,
      { rejectUnauthorized: false, checkServerIdentity: () => undefined },
    );
    // Deno's node:tls refuses an IP address as SNI; with verification off, any name will do.
    const name = options.authority ?? "meshd";
    return { creds, opts: { "grpc.ssl_target_name_override": name, "grpc.default_authority": name } };
  }
  if (!options.rootsPem) {
    throw new Error(
      `--xds-address ${address}: no root certificate to verify meshd with: give --cert-dir with root-cert.pem, ` +
        "or --insecure, or --plaintext for meshd's plain-text port",
    );
  }
  const secure = secureChannel(address, {
    rootsPem: options.rootsPem,
    clientCertificate: cert,
    serverName: options.authority,
  });
  return { creds: secure.credentials, opts: secure.options };
}

/** meshd's debug pages over xDS at one address. */
export class XdsDebugClient implements MeshdDebugSource {
  readonly #options: XdsDebugOptions;
  readonly #channel: { creds: grpc.ChannelCredentials; opts: grpc.ChannelOptions };
  #client: grpc.Client | undefined;

  /**
   * @param address `host:port` of meshd's ADS listener
   * @param options transport, credentials and timeout
   * @throws Error when TLS is asked for without roots and without `insecure`
   */
  constructor(readonly address: string, options: XdsDebugOptions) {
    this.#options = options;
    this.#channel = channel(address, options);
  }

  /**
   * Closes the connection, which sends meshd a GOAWAY. meshctl never calls it: its process exits and
   * the kernel closes the connection without one, because a GOAWAY can abort meshd inside Deno's
   * nghttp2 (denoland/deno#36788: measured about once per 400 to 3,000 closes, never in 7,000 kernel
   * closes). For callers that live on, such as tests.
   */
  close(): void {
    this.#client?.close();
    this.#client = undefined;
  }

  /** Where and how, for messages. */
  get description(): string {
    const how = this.#options.plaintext ? "plain text" : this.#options.insecure ? "TLS, not verified" : "TLS";
    return `meshd over xDS (--xds-address, ${how}) at ${this.address}`;
  }

  /** Reads a page and parses JSON. */
  async json<T>(path: string): Promise<T> {
    const text = await this.text(path);
    try {
      return JSON.parse(text) as T;
    } catch (e) {
      throw new Error(`${this.description}: ${path}: not JSON: ${(e as Error).message}`);
    }
  }

  /** Bootstrap tokens are issued over meshd's debug HTTP interface only, to loopback clients. */
  post<T>(path: string, _body: unknown): Promise<T> {
    return Promise.reject(
      new Error(
        `${path} is not available over xDS: meshd issues bootstrap tokens only on its debug HTTP interface, to ` +
          "loopback clients; run on meshd's host with --debug-address instead of --xds-address",
      ),
    );
  }

  /**
   * Reads one page: `/debug/<page>[?query]` as type URL `istio.io/debug/<page>[?query]`.
   *
   * @throws {XdsDebugError} naming the address, the type URL and the gRPC status and reason
   */
  text(path: string): Promise<string> {
    const typeUrl = `${DEBUG_TYPE_URL}/${path.replace(/^\/?(debug\/)?/, "")}`;
    // One connection for every page of a run, its own (not grpc-js's shared subchannel pool), never
    // closed by meshctl (see close()); each page's stream ends on both sides before the next.
    const client = this.#client ??= new (adsProtocol().client)(this.address, this.#channel.creds, {
      ...this.#channel.opts,
      "grpc.use_local_subchannel_pool": 1,
    });
    const metadata = new grpc.Metadata();
    if (this.#options.token) metadata.set("authorization", `Bearer ${this.#options.token}`);
    return new Promise<string>((resolve, reject) => {
      let answer: string | undefined;
      let settled = false;
      const finish = (f: () => void) => {
        if (settled) return;
        settled = true;
        f();
      };
      // meshd's reasons start with the type URL too; it is said once.
      const fail = (code: grpc.status, details: string) => {
        if (answer !== undefined) return finish(() => resolve(answer!));
        const reason = details.startsWith(`${typeUrl}: `) ? details.slice(typeUrl.length + 2) : details;
        finish(() =>
          reject(
            new XdsDebugError(
              code,
              `${this.description}: ${typeUrl}: ${grpc.status[code] ?? code}: ${reason}`,
            ),
          )
        );
      };
      // deno-lint-ignore no-explicit-any
      const call: grpc.ClientDuplexStream<any, any> = (client as any).StreamAggregatedResources(metadata, {
        deadline: Date.now() + this.#options.timeoutMs,
      });
      call.on("data", (res: { resources?: { type_url?: string; value?: Uint8Array }[] }) => {
        if (answer !== undefined) return;
        const any = res.resources?.[0];
        if (!any) return fail(grpc.status.NOT_FOUND, "meshd answered with no resource");
        answer = new TextDecoder().decode(any.value ?? new Uint8Array());
        // Half-close: meshd then ends the stream with OK, and "status" follows.
        call.end();
      });
      call.on("error", (e: grpc.ServiceError) => {
        const reason = e.code === grpc.status.DEADLINE_EXCEEDED
          ? `no answer within ${this.#options.timeoutMs} ms (--timeout)`
          : e.details || e.message;
        fail(e.code, reason);
      });
      call.on("status", (st: grpc.StatusObject) => {
        if (st.code === grpc.status.OK) fail(st.code, "meshd ended the stream without an answer");
      });
      call.write({ node: { id: NODE_ID }, typeUrl });
    });
  }
}
