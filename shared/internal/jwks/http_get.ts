/**
 * One bounded HTTP(S) GET of a key set, for meshd's JWKS resolver and the proxy's JWKS fetcher. On
 * node:http(s) rather than fetch because JWKS_RESOLVER_INSECURE_SKIP_VERIFY needs
 * `rejectUnauthorized: false`, and the proxy must send the request over a connection it made itself
 * (to a registry endpoint, with mutual TLS), neither of which Deno's fetch can do.
 *
 * @module
 */
import http from "node:http";
import https from "node:https";
import type net from "node:net";

/** Options of {@link httpGet}. */
export interface HttpGetOptions {
  /** Whole request, connect to last byte, ms. */
  timeoutMs: number;
  /** Accept any server certificate (JWKS_RESOLVER_INSECURE_SKIP_VERIFY). */
  insecureSkipVerify?: boolean;
  /** Largest body accepted, bytes; default 1 MiB. */
  maxBytes?: number;
  /** The `user-agent` header, so a JWKS server's log tells meshd from proxies. */
  userAgent?: string;
  /**
   * Makes the connection instead of dialling the URL's host: the request (Host and path from the
   * URL) is written on the socket it resolves to as is, in plain HTTP/1.1; TLS, if any, is the
   * dialler's. Its rejection fails the GET with its message.
   */
  dial?: () => Promise<net.Socket>;
}

/** An agent whose only connection is `socket` (Deno's node:http ignores a `createConnection` option). */
function socketAgent(socket: net.Socket): http.Agent {
  const agent = new http.Agent({ keepAlive: false });
  (agent as unknown as { createConnection: () => net.Socket }).createConnection = () => socket;
  return agent;
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
    let settled = false;
    const fail = (reason: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new Error(`${url}: ${reason}`));
    };
    const timer = setTimeout(() => {
      req?.destroy();
      fail(`no answer within ${options.timeoutMs} ms`);
    }, options.timeoutMs);
    const headers: Record<string, string> = { accept: "application/json" };
    if (options.userAgent) headers["user-agent"] = options.userAgent;
    let req: http.ClientRequest | undefined;
    const send = (socket?: net.Socket) => {
      const target = {
        hostname: parsed.hostname.replace(/^\[|\]$/g, ""),
        port: parsed.port || undefined,
        path: parsed.pathname + parsed.search,
        headers: { ...headers, host: parsed.host },
      };
      // A dialled socket is plain text to node:http even for https URLs: the dialler did the TLS.
      req = socket
        ? http.get({ ...target, agent: socketAgent(socket) }, onResponse)
        : client.get({ ...target, rejectUnauthorized: !options.insecureSkipVerify }, onResponse);
      req.on("error", (e) => fail(e.message));
    };
    const onResponse = (res: http.IncomingMessage) => {
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
          req?.destroy();
          fail(`body larger than ${maxBytes} bytes`);
          return;
        }
        chunks.push(c);
      });
      res.on("end", () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(new TextDecoder().decode(Buffer.concat(chunks)));
      });
      res.on("error", (e) => fail(e.message));
    };
    if (!options.dial) send();
    else {
      options.dial().then((socket) => {
        if (settled) socket.destroy();
        else send(socket);
      }, (e: Error) => fail(e.message));
    }
  });
}
