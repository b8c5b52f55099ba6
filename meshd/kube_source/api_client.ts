/**
 * meshd's HTTP transport to the Kubernetes API: Deno's fetch over HTTP/1.1, with the kubeconfig's CA,
 * client certificate and credentials (client-node's KubeConfig computes the headers: bearer tokens,
 * token files, exec plugins). client-node's own transport (undici) is not used, for two reasons
 * measured here:
 *
 * - undici 8 offers HTTP/2 by ALPN, and Deno's HTTP/2 client (nghttp2 under `node:http2`) aborted
 *   meshd (`find_stream_on_goaway_func: Assertion 'stream->closed_next == NULL' failed`) when the test
 *   API server closed its connections (denoland/deno#36788; meshd README, "Surviving any client").
 *   API servers send GOAWAYs in normal operation (kube-apiserver's `--goaway-chance`, restarts).
 * - a watch over undici under Deno never ended when its connection was cut: no `done`, no error, an
 *   informer deaf for good. Deno's fetch errors the body when the connection goes.
 *
 * Not supported: `insecure-skip-tls-verify` (refused: give the cluster's CA), `tls-server-name`,
 * proxies (`proxy-url`).
 *
 * @module
 */
import type { RequestOptions } from "node:https";
import { HttpMethod, type KubeConfig, RequestContext } from "@kubernetes/client-node";

/** An HTTP status error, as client-node's ListWatch reads them (`statusCode`, `code`). */
export class ApiError extends Error {
  /** @param status the HTTP status */
  constructor(readonly statusCode: number, message: string) {
    super(message);
  }

  /** The same status, under ApiException's name. */
  get code(): number {
    return this.statusCode;
  }
}

/** GET requests to one API server, over one HTTP/1.1 client. */
export class ApiClient {
  readonly #config: KubeConfig;
  /** Made once, on first use: concurrent first requests share it. */
  #client: Promise<Deno.HttpClient> | undefined;

  /** @param config the API server and credentials */
  constructor(config: KubeConfig) {
    this.#config = config;
  }

  /**
   * GETs `path` (with `query`) from the current cluster's server.
   *
   * @throws when the request fails to connect, or the kubeconfig asks for what is not supported
   */
  async get(path: string, query: Record<string, string>, signal?: AbortSignal): Promise<Response> {
    const server = this.#config.getCurrentCluster()?.server;
    if (!server) throw new Error("the kubeconfig's current context names no cluster");
    const url = new URL(server + path);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const ctx = new RequestContext(url.toString(), HttpMethod.GET);
    await this.#config.applySecurityAuthentication(ctx);
    // client-node made an undici dispatcher for this request; it is not used (see the module docs).
    void ctx.getDispatcher()?.close();
    const client = await (this.#client ??= this.#makeClient());
    return await fetch(url, { headers: { ...ctx.getHeaders(), accept: "application/json" }, client, signal });
  }

  /**
   * GETs a list as JSON.
   *
   * @throws ApiError on a status other than 200
   */
  async list<T>(path: string): Promise<T> {
    const response = await this.get(path, {});
    if (response.status !== 200) {
      const text = await response.text();
      throw new ApiError(response.status, `${response.status} ${response.statusText}: ${text.slice(0, 200)}`);
    }
    return await response.json();
  }

  /** Closes the HTTP client (its idle connections). */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    (await client?.catch(() => undefined))?.close();
  }

  async #makeClient(): Promise<Deno.HttpClient> {
    const tls: RequestOptions = {};
    await this.#config.applyToHTTPSOptions(tls);
    if (tls.rejectUnauthorized === false) {
      throw new Error(
        "insecure-skip-tls-verify is not supported: give the cluster's CA (certificate-authority-data)",
      );
    }
    const pem = (v: unknown): string | undefined =>
      typeof v === "string" ? v : v instanceof Uint8Array ? new TextDecoder().decode(v) : undefined;
    const ca = pem(tls.ca), cert = pem(tls.cert), key = pem(tls.key);
    return Deno.createHttpClient({
      http1: true,
      http2: false,
      ...(ca ? { caCerts: [ca] } : {}),
      ...(cert && key ? { cert, key } : {}),
    });
  }
}
