/**
 * How meshctl reads meshd's debug pages (meshd/server/debug_pages.ts: /debug/syncz, /debug/configz,
 * /debug/registryz, /debug/connections, /debug/config_dump, /debug/mesh, /debug/version, ...):
 * {@link MeshdDebugSource}, the one interface commands use, and its HTTP implementation over meshd's
 * debug interface (--httpAddr, meshctl's `--debug-address`). The other implementation asks the same
 * pages over xDS (xds_debug_client.ts, `--xds-address`).
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

/** meshd's debug pages, by path (`/debug/<name>[?query]`), whichever way they are read. */
export interface MeshdDebugSource {
  /** meshd's `host:port` as given, for messages. */
  readonly address: string;
  /** Where and how, for messages: e.g. `meshd's debug interface (--debug-address) at 127.0.0.1:8080`. */
  readonly description: string;
  /** Reads a page and parses JSON. */
  json<T>(path: string): Promise<T>;
  /** Reads a page as text. */
  text(path: string): Promise<string>;
  /** POSTs JSON to a debug path and parses the JSON answer (HTTP only: the bootstrap token). */
  post<T>(path: string, body: unknown): Promise<T>;
}

/** meshd's debug interface at one address. */
export class MeshdClient implements MeshdDebugSource {
  /** @param address `host:port` of meshd's --httpAddr; @param timeoutMs per request */
  constructor(readonly address: string, readonly timeoutMs = 30_000) {}

  /** Where, for messages. */
  get description(): string {
    return `meshd's debug interface (--debug-address) at ${this.address}`;
  }

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
