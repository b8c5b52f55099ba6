/**
 * meshd's two HTTP interfaces: self-monitoring on --monitoringAddr (/metrics in Prometheus text
 * format, /ready), and the debug interface on --httpAddr (/debug/syncz, /debug/configz,
 * /debug/registryz, /debug/connections, /debug/config_dump?proxyID=, /debug/mesh, /debug/version;
 * only when ENABLE_DEBUG_ON_HTTP). `meshd request` and meshctl's inspect commands read them.
 *
 * @module
 */
import { buildInfo, decodeResource, redactSecret, RESOURCE_TYPES, typeUrlOf } from "../../shared/mod.ts";
import type { DiscoveryServer } from "../server/discovery_server.ts";
import type { AdsStreamStatus } from "../xds/ads_server.ts";
import { PushContextGenerator, workloadKeyOf } from "../xds/generators.ts";
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

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body, null, 2) + "\n", {
    status,
    headers: { "content-type": "application/json" },
  });

const TYPE_NAMES = new Map(Object.values(RESOURCE_TYPES).map((t) => [typeUrlOf(t), t]));

/** A decoded resource for display: a TlsCredential's private key is never shown. */
function redacted(type: string, value: Record<string, unknown>): Record<string, unknown> {
  if (type !== RESOURCE_TYPES.tlsCredential || !value.privateKey) return value;
  return { ...value, privateKey: "[redacted]" };
}

/** Whether a stream is the proxy `id` names: its connection id, node id, or `<namespace>/<name>`. */
function streamMatches(s: AdsStreamStatus, id: string): boolean {
  return s.id === id || s.node.id === id || workloadKeyOf(s.node) === id;
}

/**
 * What meshd would send one proxy now (Istio's `/debug/config_dump?proxyID=`): per subscribed type,
 * the list version and each resource decoded. `proxy-status <proxy>` diffs it against the proxy's
 * own /config_dump.
 */
function proxyConfigDump(discovery: DiscoveryServer, id: string | null): Response {
  if (!id) return json({ error: "proxyID is required, e.g. /debug/config_dump?proxyID=foo/httpbin-1" }, 400);
  const stream = discovery.ads.streams().find((s) => streamMatches(s, id));
  if (!stream) return json({ error: `proxy ${JSON.stringify(id)} is not connected; see /debug/syncz` }, 404);
  const generator = new PushContextGenerator(discovery.pushContext);
  return json({
    proxy: stream.node.id,
    connection: stream.id,
    types: stream.types.map((t) => {
      const list = generator.generate(stream.node, t.typeUrl);
      const type = TYPE_NAMES.get(t.typeUrl);
      return {
        typeUrl: t.typeUrl,
        // The version a push now would carry (system_version_info), and the list's own hash.
        version: generator.version(),
        listVersion: list?.version ?? "",
        resources: (list?.resources ?? []).map((r) => ({
          name: r.name,
          version: r.version,
          value: type ? redacted(type, decodeResource(type, r.body)) : null,
        })),
      };
    }),
  });
}

/** More debug handlers, by path, given the request and the peer's IP address. */
export type DebugHandlers = Record<string, (request: Request, peerAddress: string) => Promise<Response>>;

/**
 * Serves the debug endpoints over the running discovery server, plus `extra` handlers (the
 * loopback-only bootstrap token endpoint of the CA).
 */
export function serveDebug(
  discovery: DiscoveryServer,
  address: HttpListenAddress,
  extra: DebugHandlers = {},
): Deno.HttpServer<Deno.NetAddr> {
  const endpoints: Record<string, () => unknown> = {
    // Per proxy and type: last sent and last acknowledged version and nonce (Istio's syncz).
    "/debug/syncz": () =>
      discovery.ads.streams().map((s) => ({
        proxy: s.node.id,
        workload: workloadKeyOf(s.node) ?? "",
        connection: s.id,
        protocol: s.protocol,
        types: s.types,
      })),
    "/debug/configz": () => {
      const snap = discovery.store.snapshot();
      // Secrets keep their certificates but never show private keys.
      return {
        revision: snap.revision,
        resources: snap.resources.map((e) =>
          e.kind === "Secret" ? { ...e, resource: redactSecret(e.resource) } : e
        ),
      };
    },
    "/debug/registryz": () => {
      const ctx = discovery.pushContext;
      return {
        version: ctx.version,
        builtAt: new Date(ctx.builtAt).toISOString(),
        services: ctx.services,
        workloads: [...ctx.workloads.values()],
      };
    },
    "/debug/connections": () =>
      discovery.ads.streams().map((s) => ({
        connection: s.id,
        proxy: s.node.id,
        // `<namespace>/<name>` and the node metadata: how meshctl finds a proxy and its admin port.
        workload: workloadKeyOf(s.node) ?? "",
        metadata: s.node.metadata,
        peer: s.peer,
        protocol: s.protocol,
        connectedAt: new Date(s.connectedAt).toISOString(),
        types: s.types.map((t) => t.typeUrl),
      })),
    "/debug/mesh": () => ({
      rootNamespace: discovery.pushContext.rootNamespace,
      trustDomain: discovery.pushContext.trustDomain,
    }),
    "/debug/version": () => ({ component: "meshd", ...buildInfo() }),
  };
  return Deno.serve({ ...listenOn(address), onListen() {} }, (req, info) => {
    const path = new URL(req.url).pathname;
    const endpoint = endpoints[path];
    if (path === "/debug/config_dump") {
      return proxyConfigDump(discovery, new URL(req.url).searchParams.get("proxyID"));
    }
    if (endpoint) return json(endpoint());
    const handler = extra[path];
    if (handler) return handler(req, (info.remoteAddr as Deno.NetAddr).hostname);
    if (path === "/debug" || path === "/debug/") {
      return json([...Object.keys(endpoints), "/debug/config_dump", ...Object.keys(extra)]);
    }
    return new Response(`not found: ${path}; see /debug for the list\n`, { status: 404 });
  });
}
