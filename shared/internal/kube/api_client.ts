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
 * Requests wait for a token bucket (--orchApiQPS, --orchApiBurst), as client-go's do.
 *
 * Not supported: `insecure-skip-tls-verify` (refused: give the cluster's CA), `tls-server-name`,
 * proxies (`proxy-url`).
 *
 * @module
 */
import type { RequestOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

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

/** Options of {@link ApiClient}. */
export interface ApiClientOptions {
  /**
   * --orchApiQPS and --orchApiBurst: requests per second and the burst allowed above it (client-go's
   * token bucket: `burst` requests at once, then one every 1/qps s). Default: no limit.
   */
  rateLimit?: { qps: number; burst: number };
  /**
   * Headers sent with every request, after (and replacing) the kubeconfig's: `[name, value]` pairs, a
   * name repeated for a header that repeats (meshctl's Impersonate-User/-Group/-Uid, as kubectl's
   * `--as`, `--as-group`, `--as-uid`).
   */
  headers?: [string, string][];
}

/** The parts of a request beyond its method and path. */
export interface ApiRequest {
  query?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  /** Default `application/json`; `application/merge-patch+json` etc. for PATCH. */
  contentType?: string;
  signal?: AbortSignal;
}

/** Requests to one API server, over one HTTP/1.1 client, at most at the configured rate. */
export class ApiClient {
  readonly #config: KubeConfig;
  readonly #limiter: TokenBucket | undefined;
  readonly #extraHeaders: [string, string][];
  /** Made once, on first use: concurrent first requests share it. */
  #client: Promise<Deno.HttpClient> | undefined;

  /**
   * @param config the API server and credentials
   * @param options the rate limit
   */
  constructor(config: KubeConfig, options: ApiClientOptions = {}) {
    this.#config = config;
    const r = options.rateLimit;
    this.#limiter = r && r.qps > 0 ? new TokenBucket(r.qps, Math.max(1, r.burst)) : undefined;
    this.#extraHeaders = options.headers ?? [];
  }

  /**
   * GETs `path` (with `query`) from the current cluster's server.
   *
   * @throws when the request fails to connect, or the kubeconfig asks for what is not supported
   */
  get(path: string, query: Record<string, string>, signal?: AbortSignal): Promise<Response> {
    return this.request("GET", path, { query, signal });
  }

  /**
   * Sends one request to the current cluster's server, after waiting for the rate limiter.
   *
   * @throws when the request fails to connect, or the kubeconfig asks for what is not supported
   */
  async request(method: string, path: string, req: ApiRequest = {}): Promise<Response> {
    const server = this.#config.getCurrentCluster()?.server;
    if (!server) throw new Error("the kubeconfig's current context names no cluster");
    const url = new URL(server + path);
    for (const [k, v] of Object.entries(req.query ?? {})) url.searchParams.set(k, v);
    await this.#limiter?.take(req.signal);
    const headers: [string, string][] = [...await this.headers(), ["accept", "application/json"]];
    const client = await this.httpClient();
    if (req.body !== undefined) headers.push(["content-type", req.contentType ?? "application/json"]);
    return await fetch(url, {
      method,
      headers,
      client,
      signal: req.signal,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
    });
  }

  /**
   * Sends a request and reads its JSON answer.
   *
   * @throws ApiError on a status other than 2xx, with the API's message
   */
  async json<T>(method: string, path: string, req: ApiRequest = {}): Promise<T> {
    const response = await this.request(method, path, req);
    if (response.status < 200 || response.status > 299) {
      const text = await response.text();
      let message = text.slice(0, 300);
      try {
        const status = JSON.parse(text);
        if (typeof status?.message === "string") message = status.message;
      } catch {
        // Not a Status object: the text itself says what went wrong.
      }
      throw new ApiError(response.status, `${method} ${path}: ${response.status} ${message}`);
    }
    return await response.json() as T;
  }

  /**
   * GETs a list as JSON.
   *
   * @throws ApiError on a status other than 200
   */
  list<T>(path: string): Promise<T> {
    return this.json<T>("GET", path);
  }

  /**
   * The credential headers of the current user and the `headers` option, as every request sends them
   * (also for a WebSocket to the same server, e.g. port-forward). A list of pairs, not a Headers object:
   * Deno's fetch and WebSocket send a name repeated in a list as separate lines (measured), as the API
   * server reads Impersonate-Group, but join `Headers.append`'s values with ", ".
   */
  async headers(): Promise<[string, string][]> {
    const replaced = new Set(this.#extraHeaders.map(([name]) => name.toLowerCase()));
    return [
      ...Object.entries(await this.#authHeaders()).filter(([name]) => !replaced.has(name.toLowerCase())),
      ...this.#extraHeaders,
    ];
  }

  /**
   * The HTTP/1.1 client with the kubeconfig's CA and client certificate (made once; {@link close}
   * closes it), also for a WebSocket's `client` option.
   *
   * @throws when the kubeconfig asks for what is not supported
   */
  httpClient(): Promise<Deno.HttpClient> {
    return this.#client ??= this.#makeClient();
  }

  /** Closes the HTTP client (its idle connections). */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    (await client?.catch(() => undefined))?.close();
  }

  /**
   * The credentials' headers, as client-node computes them for the current user (bearer tokens, token
   * files, exec and auth-provider plugins, impersonation; basic auth from `auth`). Its
   * `applyToHTTPSOptions` is used rather than `applySecurityAuthentication`, which makes an undici
   * dispatcher per request: measured here, undici's module-wide timer tick outlived the requests and
   * showed as leaked timers in other tests.
   */
  async #authHeaders(): Promise<Record<string, string>> {
    const opts: RequestOptions = {};
    await this.#config.applyToHTTPSOptions(opts);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = String(v);
    if (typeof opts.auth === "string") headers.authorization = `Basic ${btoa(opts.auth)}`;
    return headers;
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

/**
 * client-go's token bucket (flowcontrol.NewTokenBucketRateLimiter): `burst` tokens, refilled at `qps`
 * a second; a request waits for a token, in arrival order.
 */
export class TokenBucket {
  #tokens: number;
  #last = performance.now();
  #queue: Promise<void> = Promise.resolve();

  /**
   * @param qps tokens added per second (> 0)
   * @param burst the most tokens held
   */
  constructor(readonly qps: number, readonly burst: number) {
    this.#tokens = burst;
  }

  /**
   * Waits for a token.
   *
   * @throws the signal's reason when it aborts while waiting
   */
  take(signal?: AbortSignal): Promise<void> {
    const turn = this.#queue.then(() => this.#wait(signal));
    this.#queue = turn.catch(() => {});
    return turn;
  }

  async #wait(signal?: AbortSignal): Promise<void> {
    const now = performance.now();
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
    this.#last = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return;
    }
    const waitMs = ((1 - this.#tokens) / this.qps) * 1000;
    await new Promise<void>((resolve, reject) => {
      signal?.throwIfAborted();
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, waitMs);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    this.#tokens = 0;
    this.#last = performance.now();
  }
}
