/**
 * meshd's two HTTP interfaces: self-monitoring on --monitoringAddr (/metrics in Prometheus text
 * format, /ready), and the debug interface on --httpAddr (the pages of meshd/server/debug_pages.ts
 * under /debug/; only when ENABLE_DEBUG_ON_HTTP). `meshd request` and meshctl's inspect commands read them.
 *
 * @module
 */
import type { DebugPages } from "../server/debug_pages.ts";
import type { MeshdMetrics } from "./metrics.ts";

/** Where an HTTP interface listens: a parsed flag value (meshd/options, ListenAddress). */
export interface HttpListenAddress {
  /** Host name or IP; empty for every address. */
  host: string;
  /** 0 picks a free port. */
  port: number;
}

function listenOn(a: HttpListenAddress): { hostname: string; port: number } {
  return { hostname: a.host === "" ? "0.0.0.0" : a.host, port: a.port };
}

function isLoopback(addr: Deno.Addr): boolean {
  const host = (addr as Deno.NetAddr).hostname ?? "";
  return host.startsWith("127.") || host === "::1" || host === "::ffff:127.0.0.1";
}

/** Options of {@link serveMonitoring}. */
export interface MonitoringOptions {
  /** --monitoringAddr. */
  address: HttpListenAddress;
  /** METRICS_LOCALHOST_ACCESS_ONLY: refuse /metrics to non-loopback peers. */
  localhostOnly: boolean;
  /** Whether meshd is ready (config loaded, ADS serving). */
  ready: () => boolean;
}

/** Serves /metrics and /ready. */
export function serveMonitoring(
  metrics: MeshdMetrics,
  options: MonitoringOptions,
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ ...listenOn(options.address), onListen() {} }, async (req, info) => {
    const path = new URL(req.url).pathname;
    if (path === "/metrics") {
      if (options.localhostOnly && !isLoopback(info.remoteAddr)) {
        return new Response("metrics are served to localhost only (METRICS_LOCALHOST_ACCESS_ONLY)\n", {
          status: 403,
        });
      }
      return new Response(await metrics.registry.metrics(), {
        headers: { "content-type": metrics.registry.contentType },
      });
    }
    if (path === "/ready") {
      return options.ready() ? new Response("ready\n") : new Response("not ready\n", { status: 503 });
    }
    return new Response(`not found: ${path}; try /metrics or /ready\n`, { status: 404 });
  });
}

/** More debug handlers, by path, given the request and the peer's IP address. */
export type DebugHandlers = Record<string, (request: Request, peerAddress: string) => Promise<Response>>;

/**
 * Serves the debug pages (meshd/server/debug_pages.ts, shared with debug requests over xDS) under
 * `/debug/<name>`, plus `extra` handlers (the loopback-only bootstrap token endpoint of the CA).
 */
export function serveDebug(
  pages: DebugPages,
  address: HttpListenAddress,
  extra: DebugHandlers = {},
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ ...listenOn(address), onListen() {} }, (req, info) => {
    const url = new URL(req.url);
    const path = url.pathname;
    const handler = extra[path];
    if (handler) return handler(req, (info.remoteAddr as Deno.NetAddr).hostname);
    if (path === "/debug" || path === "/debug/") {
      return Response.json([...pages.names.map((n) => `/debug/${n}`), ...Object.keys(extra)]);
    }
    if (!path.startsWith("/debug/")) {
      return new Response(`not found: ${path}; see /debug for the list\n`, { status: 404 });
    }
    const page = pages.render({ name: path.slice("/debug/".length), query: url.searchParams });
    return new Response(page.body, { status: page.status, headers: { "content-type": page.contentType } });
  });
}
