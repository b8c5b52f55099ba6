/**
 * The webhooks' HTTPS server on --httpsAddr (Istio's 15017): `POST /inject` (and Istio's
 * `/inject/<anything>` forms, e.g. `/inject/cluster/<c>/net/<n>`) and `POST /validate` (and
 * `/validate/`), AdmissionReview v1 JSON in and out. The server only checks method, path,
 * Content-Type and size; the body is parsed and answered by the sandboxed Worker
 * (worker_client.ts). TLS with meshd's serving certificate: {@link WebhookServer.updateCertificate}
 * takes a renewed one for new handshakes, leaving established connections alone.
 *
 * node:https because a Deno.serve server cannot change its certificate while it runs.
 *
 * Refusals (plain text bodies): 404 for another path, 405 for another method, 415 for a
 * Content-Type other than application/json (as Istio), 413 above {@link MAX_BODY_BYTES}, 400 for a
 * body that is not an AdmissionReview v1 (the message names the field), 500 when the Worker failed.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ListenAddress } from "../../shared/internal/cli/go_values.ts";
import type { HandlerOutcome } from "./handler.ts";
import { recordHttpError, recordOutcome, type WebhookMetrics } from "./metrics.ts";
import type { WebhookWorker } from "./worker_client.ts";

/** The largest body accepted, bytes: Kubernetes objects are at most 1.5 MiB, an AdmissionReview carries two. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** A certificate chain (leaf first) and its key, PEM. */
export interface ServingPem {
  certChainPem: string;
  privateKeyPem: string;
}

/** Where the server logs. */
export interface WebhookLog {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
}

/** Options of {@link startWebhookServer}. */
export interface WebhookServerOptions {
  address: ListenAddress;
  certificate: ServingPem;
  worker: WebhookWorker;
  metrics: WebhookMetrics;
  log: WebhookLog;
}

/** A running server. */
export interface WebhookServer {
  /** The bound port (useful with port 0). */
  port: number;
  /** Serves `pem` to new connections. */
  updateCertificate(pem: ServingPem): void;
  /** Stops accepting and closes idle connections. */
  close(): Promise<void>;
}

/** Which webhook a path is, or undefined. */
export function webhookOf(path: string): "inject" | "validate" | undefined {
  if (path === "/inject" || path.startsWith("/inject/")) return "inject";
  if (path === "/validate" || path === "/validate/") return "validate";
  return undefined;
}

function reply(res: ServerResponse, status: number, body: string, type = "text/plain; charset=utf-8"): void {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/**
 * Reads the body up to the limit; undefined as soon as it is larger (nothing more is read: the
 * connection is closed after the 413, so a client cannot keep meshd reading).
 */
function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const onData = (chunk: Uint8Array) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) return void chunks.push(chunk);
      req.off("data", onData);
      req.pause();
      resolve(undefined);
    };
    req.on("data", onData);
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function describe(o: HandlerOutcome): string {
  return o.webhook === "inject"
    ? `${o.outcome}: ${o.reason}`
    : `${o.kind} ${o.outcome}${o.reason ? `: ${o.reason}` : ""}`;
}

/** Starts the server; resolves once it listens. */
export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const { worker, metrics, log } = options;
  const tls = (pem: ServingPem) => ({
    cert: pem.certChainPem,
    key: pem.privateKeyPem,
    minVersion: "TLSv1.2" as const,
  });
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? "/", "https://webhook").pathname;
    const webhook = webhookOf(path);
    const refuse = (status: number, message: string) => {
      if (webhook) recordHttpError(metrics, webhook, status);
      log.debug(`${req.method} ${path}: ${status} ${message}`);
      reply(res, status, `${message}\n`);
    };
    if (!webhook) return refuse(404, `no webhook at ${path}: POST /inject or /validate`);
    if (req.method !== "POST") return refuse(405, `${req.method} is not allowed: POST an AdmissionReview`);
    const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
    if (type !== "application/json") {
      return refuse(415, `invalid Content-Type ${JSON.stringify(type)}, want application/json`);
    }
    const body = await readBody(req);
    if (body === undefined) {
      res.setHeader("connection", "close");
      // The rest of the body stays unread, so the client may see a reset instead of the 413.
      res.on("finish", () => req.socket.destroy());
      return refuse(413, `the body is larger than ${MAX_BODY_BYTES} bytes`);
    }
    let answer;
    try {
      answer = await worker.handle(webhook, body);
    } catch (e) {
      return refuse(500, `the webhook failed: ${(e as Error).message}`);
    }
    if ("badRequest" in answer) return refuse(400, `not an AdmissionReview v1: ${answer.badRequest}`);
    recordOutcome(metrics, answer.outcome);
    log.debug(`${path}: ${describe(answer.outcome)}`);
    if (answer.outcome.outcome === "failed") log.warn(`${path}: ${describe(answer.outcome)}`);
    reply(res, 200, JSON.stringify(answer.review), "application/json");
  };
  const server = https.createServer(tls(options.certificate), (req, res) => {
    handle(req, res).catch((e) => {
      log.warn(`webhook request failed: ${(e as Error).message}`);
      if (!res.headersSent) reply(res, 500, "internal error\n");
      else res.destroy();
    });
  });
  const host = options.address.host === "" ? "0.0.0.0" : options.address.host;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.address.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : options.address.port;
  log.info(`webhooks listening on ${host}:${port} (HTTPS: /inject, /validate)`);
  return {
    port,
    updateCertificate: (pem) => server.setSecureContext(tls(pem)),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
