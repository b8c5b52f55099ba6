/**
 * The status listener on `--statusPort` (Istio's pilot-agent status port 15020): where the injector
 * points the kubelet's rewritten probes. It serves only:
 *
 * - `GET /app-health/<container>/livez|readyz|startupz`: the original probe of that name from
 *   ISTIO_KUBE_APP_PROBERS, performed against 127.0.0.1 (./app_probe.ts); an unknown name is 404;
 * - `GET /healthz/ready`: 200 when the proxy is LIVE, else 503 (pilot-agent's readiness path).
 *
 * Not an open proxy: the request chooses a probe by its exact path and nothing else; its query,
 * headers and body are never forwarded. Concurrent requests for one probe share one check, so a flood
 * of requests does not become a flood of probes against the application. Other methods: 405.
 *
 * @module
 */
import type { AppProbers } from "../../shared/internal/app_probers.ts";
import type { ScopedLog } from "../logging/logger.ts";
import { type ProbeResult, runAppProbe } from "./app_probe.ts";

/** What the status handler needs. */
export interface StatusSource {
  probers: AppProbers;
  /** Whether the proxy serves (LIVE). */
  ready(): boolean;
  log?: ScopedLog;
}

function text(body: string, status: number): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

/** The status handler: one instance per listener (it holds the checks in flight). */
export function statusHandler(source: StatusSource): (req: Request) => Promise<Response> {
  // A Map, so that no path reaches Object.prototype.
  const probers = new Map(Object.entries(source.probers));
  const inFlight = new Map<string, Promise<ProbeResult>>();
  return async (req: Request): Promise<Response> => {
    if (req.method !== "GET" && req.method !== "HEAD") return text("method not allowed\n", 405);
    const path = new URL(req.url).pathname;
    if (path === "/healthz/ready") {
      return source.ready() ? text("ready\n", 200) : text("not ready: the proxy is not LIVE\n", 503);
    }
    const prober = probers.get(path);
    if (!prober) return text(`no such probe: ${path}\n`, 404);
    let check = inFlight.get(path);
    if (!check) {
      check = runAppProbe(prober).finally(() => inFlight.delete(path));
      inFlight.set(path, check);
    }
    const result = await check;
    if (result.status !== 200) source.log?.debug("app probe failed", { path, reason: result.reason });
    return text(`${result.reason}\n`, result.status);
  };
}

/** A running status listener. */
export interface StatusServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves the status handler on `hostname`:`port` (0: any free port).
 *
 * @throws Deno.errors.AddrInUse and the like when it cannot listen
 */
export function startStatusServer(hostname: string, port: number, source: StatusSource): StatusServer {
  const server = Deno.serve(
    { hostname, port, onListen() {}, onError: () => text("internal error\n", 500) },
    statusHandler(source),
  );
  return { port: server.addr.port, close: () => server.shutdown() };
}
