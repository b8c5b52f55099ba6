/**
 * The admin interface on 127.0.0.1:<--proxy-admin-port>, after Envoy's: `/config_dump`, `/stats`,
 * `/stats/prometheus`, `/logging`, `/ready`, `/server_info` and `/quitquitquit`. Changes (`/logging`
 * with parameters, `/quitquitquit`) need POST, as in Envoy. Formats: proxy/docs/admin.md.
 *
 * @module
 */
import { type ScopedLog } from "../logging/logger.ts";
import {
  isLoggerName,
  isLogLevel,
  LOG_LEVELS,
  type LoggerName,
  type LogLevel,
  type LogLevels,
} from "../../shared/internal/logging/levels.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";
import type { WorkerCounters } from "../workers/pool.ts";
import { type BootstrapInfo, buildConfigDump, type LastUpdated } from "./config_dump.ts";
import { collectStats, formatJson, formatPrometheus, formatText } from "./stats.ts";
import { formatIstioPrometheus, mergeIstioSeries } from "../http/istio_metrics.ts";
import { formatIstioTcpPrometheus, mergeIstioTcpSeries } from "../tcp/tcp_metrics.ts";

/** Envoy's server states. */
export type ServerState = "LIVE" | "DRAINING" | "PRE_INITIALIZING" | "INITIALIZING";

const STATE_NUMBER: Record<ServerState, number> = {
  LIVE: 0,
  DRAINING: 1,
  PRE_INITIALIZING: 2,
  INITIALIZING: 3,
};

/** What the admin server reads and changes. */
export interface AdminSource {
  bootstrap: BootstrapInfo;
  snapshot(): RuntimeSnapshot;
  lastUpdated(): LastUpdated;
  agentStatus(): {
    ads?: { connected: boolean };
    certificate?: unknown;
    jwks?: { counters: { success: number; failed: number } };
  } & Record<string, unknown>;
  workerCounters(): Promise<WorkerCounters[]>;
  workersApplied(): number[];
  state(): ServerState;
  levels(): LogLevels;
  setLevels(levels: Partial<LogLevels>): void;
  /** Starts a graceful shutdown (after the answer is sent). */
  quit(): void;
}

function text(body: string, status = 200): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value, null, 2) + "\n", {
    status,
    headers: { "content-type": "application/json" },
  });
}

const INDEX = `admin commands are:
  /: this list
  /config_dump: the configuration as JSON (bootstrap, listeners, clusters, endpoints, routes, secrets without private keys)
  /stats: counters and gauges (?format=json, ?filter=<regex>)
  /stats/prometheus: the same in Prometheus text format
  /logging: the loggers and their levels; POST ?level=<level>, ?<logger>=<level> or ?paths=<logger>:<level>,...
  /ready: 200 LIVE when the proxy serves, else 503 and the state
  /server_info: state, uptime, node, concurrency as JSON
  /quitquitquit: POST: exit gracefully
`;

function loggingList(levels: LogLevels): string {
  return "active loggers:\n" + Object.entries(levels).map(([k, v]) => `  ${k}: ${v}\n`).join("");
}

/** Handles one admin request. */
export async function handleAdmin(req: Request, source: AdminSource, log?: ScopedLog): Promise<Response> {
  const url = new URL(req.url);
  const post = req.method === "POST";
  if (req.method !== "GET" && req.method !== "HEAD" && !post) return text("method not allowed\n", 405);
  switch (url.pathname) {
    case "/":
      return text(INDEX);
    case "/config_dump":
      return json(buildConfigDump(source.bootstrap, source.snapshot(), source.lastUpdated(), {
        agent: source.agentStatus(),
        workersApplied: source.workersApplied(),
      }));
    case "/stats":
    case "/stats/prometheus": {
      let filter: RegExp | undefined;
      const f = url.searchParams.get("filter");
      if (f) {
        try {
          filter = new RegExp(f);
        } catch (e) {
          return text(`filter: invalid regex: ${(e as Error).message}\n`, 400);
        }
      }
      const snapshot = source.snapshot();
      const status = source.agentStatus();
      const workers = await source.workerCounters();
      const stats = collectStats(workers, [
        ...source.bootstrap.inbound,
        ...(source.bootstrap.outbound
          ? [{
            address: source.bootstrap.outbound.host,
            port: source.bootstrap.outbound.port,
            direction: "outbound" as const,
          }]
          : []),
      ], {
        concurrency: source.bootstrap.concurrency,
        uptimeSeconds: (Date.now() - source.bootstrap.startedAt) / 1000,
        state: STATE_NUMBER[source.state()],
        controlPlaneConnected: status.ads?.connected ?? false,
        certificateNotAfter: snapshot.certificate?.notAfter,
        jwksFetch: status.jwks?.counters,
        now: Date.now(),
      });
      if (url.pathname === "/stats/prometheus") {
        const istio = mergeIstioSeries(workers.flatMap((w) => w.istio ?? []));
        const tcp = mergeIstioTcpSeries(workers.flatMap((w) => w.istioTcp ?? []));
        return new Response(
          formatPrometheus(stats) + formatIstioPrometheus(istio) + formatIstioTcpPrometheus(tcp),
          {
            headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
          },
        );
      }
      const format = url.searchParams.get("format");
      if (format === "json") {
        return new Response(formatJson(stats, filter), { headers: { "content-type": "application/json" } });
      }
      if (format !== null && format !== "text") return text(`format: use json or text\n`, 400);
      return text(formatText(stats, filter));
    }
    case "/logging": {
      const params = [...url.searchParams].filter(([k]) => k !== "format");
      if (params.length > 0) {
        if (!post) return text("/logging changes levels only with POST\n", 405);
        const changes: Partial<LogLevels> = {};
        const errors: string[] = [];
        const set = (logger: string, level: string) => {
          if (!isLogLevel(level)) {
            errors.push(`unknown level ${JSON.stringify(level)}; use ${LOG_LEVELS.join(", ")}`);
          } else if (logger === "*") {
            for (const l of Object.keys(source.levels())) changes[l as LoggerName] = level;
          } else if (!isLoggerName(logger)) errors.push(`unknown logger ${JSON.stringify(logger)}`);
          else changes[logger] = level as LogLevel;
        };
        for (const [k, v] of params) {
          if (k === "level") set("*", v);
          else if (k === "paths") {
            for (const pair of v.split(",").filter((p) => p !== "")) {
              const [logger, level] = pair.split(":");
              set(logger, level ?? "");
            }
          } else set(k, v);
        }
        if (errors.length > 0) return text(errors.join("\n") + "\n" + loggingList(source.levels()), 400);
        source.setLevels(changes);
        log?.info("log levels changed", { levels: changes });
      }
      if (url.searchParams.get("format") === "json") return json({ loggers: source.levels() });
      return text(loggingList(source.levels()));
    }
    case "/ready": {
      const state = source.state();
      return text(`${state}\n`, state === "LIVE" ? 200 : 503);
    }
    case "/server_info":
      return json({
        state: source.state(),
        uptime_seconds: Math.floor((Date.now() - source.bootstrap.startedAt) / 1000),
        concurrency: source.bootstrap.concurrency,
        node: source.bootstrap.node,
        revision: source.snapshot().revision,
      });
    case "/quitquitquit":
      if (!post) return text("/quitquitquit needs POST\n", 405);
      log?.info("quitquitquit: shutting down");
      setTimeout(() => source.quit(), 0);
      return text("OK\n");
    default:
      return text(`invalid path: ${url.pathname}\n${INDEX}`, 404);
  }
}

/** A running admin server. */
export interface AdminServer {
  port: number;
  close(): Promise<void>;
}

/** Serves the admin interface on 127.0.0.1:`port` (0: any free port). */
export function startAdmin(port: number, source: AdminSource, log: ScopedLog): AdminServer {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port, onListen() {}, onError: (e) => text(`error: ${String(e)}\n`, 500) },
    (req) => handleAdmin(req, source, log),
  );
  return { port: server.addr.port, close: () => server.shutdown() };
}
