/**
 * The HTTPS listener: a node:https server (HTTP/1.1 only) that turns each request into a web
 * `Request`, runs the handler and writes the `Response` back, streaming bodies (watches). Deno.serve is
 * not used because its graceful shutdown waits forever for idle HTTP/2 connections that in-process
 * clients (client-node's agent on Deno) keep open; node's `closeAllConnections()` ends them.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type { IncomingMessage, ServerResponse } from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";

/** A listening server. */
export interface HttpsListener {
  port: number;
  /** Stops listening and ends every open connection (watches included). */
  close(): Promise<void>;
}

function toRequest(req: IncomingMessage, host: string, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (Array.isArray(v)) { for (const x of v) headers.append(k, x); }
    else if (v !== undefined) headers.set(k, v);
  }
  let cancelled = false;
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  const body = hasBody
    ? new ReadableStream<Uint8Array>({
      start(c): void {
        req.on("data", (chunk: Buffer) => {
          if (!cancelled) c.enqueue(new Uint8Array(chunk));
        });
        req.on("end", () => {
          if (!cancelled) c.close();
        });
        req.on("error", (e) => {
          if (!cancelled) c.error(e);
        });
      },
      cancel(): void {
        cancelled = true;
        req.resume();
      },
    })
    : null;
  return new Request(`https://${host}${req.url ?? "/"}`, { method: req.method, headers, body, signal });
}

async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => headers[k] = v);
  res.writeHead(response.status, headers);
  // A watch with nothing to send yet must still answer its headers: clients wait for them.
  res.flushHeaders();
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  res.on("close", () => reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(Buffer.from(value));
    }
  } catch {
    // The client went away mid-stream: nothing to answer.
  }
  res.end();
}

/**
 * Listens on hostname:port (0: any free port) with the PEM certificate and key. The handler also gets
 * the header lines as received (a `Request` joins a repeated header's values with ", "). `onUpgrade`
 * takes HTTP upgrades (WebSocket port-forward); one it returns false for is answered 400.
 */
export async function listenHttps(
  opts: { hostname: string; port: number; certPem: string; keyPem: string },
  handler: (req: Request, rawHeaders: [string, string][]) => Promise<Response>,
  onUpgrade?: (req: IncomingMessage, socket: Duplex) => boolean,
): Promise<HttpsListener> {
  const server = https.createServer({ cert: opts.certPem, key: opts.keyPem }, (req, res) => {
    const abort = new AbortController();
    res.on("close", () => abort.abort());
    const host = req.headers.host ?? opts.hostname;
    const raw: [string, string][] = [];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      raw.push([req.rawHeaders[i], req.rawHeaders[i + 1]]);
    }
    handler(toRequest(req, host, abort.signal), raw)
      .then((response) => writeResponse(res, response))
      .catch((e) => {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(String(e));
      });
  });
  const upgraded = new Set<Duplex>();
  server.on("upgrade", (req: IncomingMessage, socket: Duplex) => {
    upgraded.add(socket);
    socket.on("close", () => upgraded.delete(socket));
    if (!onUpgrade?.(req, socket)) socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.hostname, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const s of upgraded) s.destroy();
      }),
  };
}
