/**
 * One bounded HTTP(S) GET for the JWKS resolver, on node:http(s) rather than fetch because
 * JWKS_RESOLVER_INSECURE_SKIP_VERIFY needs `rejectUnauthorized: false`, which Deno's fetch cannot do.
 *
 * @module
 */
import http from "node:http";
import https from "node:https";

/** Options of {@link httpGet}. */
export interface HttpGetOptions {
  /** Whole request, connect to last byte, ms. */
  timeoutMs: number;
  /** Accept any server certificate (JWKS_RESOLVER_INSECURE_SKIP_VERIFY). */
  insecureSkipVerify: boolean;
  /** Largest body accepted, bytes; default 1 MiB. */
  maxBytes?: number;
}

/**
 * Fetches a URL's body as text.
 *
 * @throws Error naming the URL and the reason: not http(s), connection or TLS failure, timeout,
 *   a status other than 200, or a body over the limit
 */
export function httpGet(url: string, options: HttpGetOptions): Promise<string> {
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  return new Promise((resolve, reject) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      reject(new Error(`${url}: not a URL`));
      return;
    }
    const client = parsed.protocol === "https:" ? https : parsed.protocol === "http:" ? http : undefined;
    if (!client) {
      reject(new Error(`${url}: scheme ${parsed.protocol} is not http or https`));
      return;
    }
    const fail = (reason: string) => reject(new Error(`${url}: ${reason}`));
    const req = client.get(url, {
      rejectUnauthorized: !options.insecureSkipVerify,
      headers: { accept: "application/json" },
    }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        fail(`HTTP status ${res.statusCode}`);
        return;
      }
      const chunks: Uint8Array[] = [];
      let size = 0;
      res.on("data", (c: Uint8Array) => {
        size += c.length;
        if (size > maxBytes) {
          req.destroy();
          fail(`body larger than ${maxBytes} bytes`);
          return;
        }
        chunks.push(c);
      });
      res.on("end", () => resolve(new TextDecoder().decode(Buffer.concat(chunks))));
      res.on("error", (e) => fail(e.message));
    });
    const timer = setTimeout(() => {
      req.destroy();
      fail(`no answer within ${options.timeoutMs} ms`);
    }, options.timeoutMs);
    req.on("error", (e) => fail(e.message));
    req.on("close", () => clearTimeout(timer));
  });
}
