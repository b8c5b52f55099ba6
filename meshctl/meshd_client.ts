/**
 * meshctl's client of meshd's debug interface (meshd --httpAddr: /debug/syncz, /debug/configz,
 * /debug/registryz, /debug/connections, /debug/config_dump, /debug/mesh, /debug/version, ...).
 * Istio's istioctl reaches istiod's debug endpoints over xDS (`--xds-address`, debug type URLs);
 * meshctl reads the same information over plain HTTP on meshd's debug port instead.
 *
 * @module
 */

/** Default of `--debug-address`: meshd's --httpAddr default (:8080) on this host. */
export const DEFAULT_DEBUG_ADDRESS = "localhost:8080";

/** An HTTP error answer, with meshd's reason. */
export class HttpError extends Error {
  /** @param status the HTTP status; @param message what failed, naming the address and path */
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = "HttpError";
  }
}

/** Options of {@link httpRequest}. */
export interface HttpRequestOptions {
  method?: string;
  body?: string;
  headers?: Record<string, string>;
  /** ms; default 30 s (the seed's --timeout). */
  timeoutMs?: number;
  /** What the address is, for error messages, e.g. "meshd's debug interface (--debug-address)". */
  what: string;
}

/**
 * One HTTP request to `http://<address><path>`; returns the body text of a 2xx answer.
 *
 * @throws {HttpError} on a non-2xx answer (with the body's `error` field or text), or when the
 *   address cannot be reached (status 0)
 */
export async function httpRequest(
  address: string,
  path: string,
  options: HttpRequestOptions,
): Promise<string> {
  const url = `http://${address}${path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: options.method ?? "GET",
      body: options.body,
      headers: options.headers,
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    });
  } catch (e) {
    const reason = (e as Error).name === "TimeoutError" ? "timed out" : (e as Error).message;
    throw new HttpError(0, `cannot reach ${options.what} at ${address}: ${reason}`);
  }
  const text = await res.text();
  if (!res.ok) {
    let reason = text.trim();
    try {
      reason = (JSON.parse(text) as { error?: string }).error ?? reason;
    } catch {
      // a plain-text answer
    }
    throw new HttpError(res.status, `${options.what} at ${address}: ${path}: ${res.status}: ${reason}`);
  }
  return text;
}

/** meshd's debug interface at one address. */
export class MeshdClient {
  /** @param address `host:port` of meshd's --httpAddr; @param timeoutMs per request */
  constructor(readonly address: string, readonly timeoutMs = 30_000) {}

  /** GETs a debug path and parses JSON. */
  async json<T>(path: string): Promise<T> {
    return JSON.parse(await this.text(path)) as T;
  }

  /** GETs a debug path as text. */
  text(path: string): Promise<string> {
    return httpRequest(this.address, path, {
      timeoutMs: this.timeoutMs,
      what: "meshd's debug interface (--debug-address)",
    });
  }

  /** POSTs JSON to a debug path and parses the JSON answer. */
  async post<T>(path: string, body: unknown): Promise<T> {
    return JSON.parse(
      await httpRequest(this.address, path, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
        timeoutMs: this.timeoutMs,
        what: "meshd's debug interface (--debug-address)",
      }),
    ) as T;
  }
}
