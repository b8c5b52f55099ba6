/**
 * The sections of a proxy's config dump (proxy/docs/admin.md, "/config_dump") as `proxy-config` shows
 * them: each section's entries after the seed's filters, and the short table istioctl prints.
 *
 * @module
 */
import { X509Certificate } from "node:crypto";
import { DUMP_TYPES } from "../../shared/internal/config_dump/types.ts";
import type { ConfigDump } from "../proxy_admin.ts";
import { table } from "../output.ts";

export { DUMP_TYPES };

// deno-lint-ignore no-explicit-any
type Json = any;

/**
 * One section of a dump.
 *
 * @throws Error naming the missing `@type`
 */
export function section(dump: ConfigDump, type: string): Json {
  const found = dump.configs.find((c) => c["@type"] === type);
  if (!found) throw new Error(`the config dump has no ${type} section`);
  return found;
}

/** Filters of the seed's proxy-config table; all optional. */
export interface Filters {
  address?: string;
  port?: number;
  direction?: string;
  fqdn?: string;
  subset?: string;
  cluster?: string;
  status?: string;
  name?: string;
  type?: string;
}

/** `inbound|8080||` / `outbound|8000||httpbin.foo.svc.cluster.local` → its parts. */
function clusterParts(name: string): { direction: string; port: string; subset: string; fqdn: string } {
  const [direction = "", port = "", subset = "", fqdn = ""] = name.split("|");
  return { direction, port, subset, fqdn };
}

/** The clusters, filtered. */
export function clusters(dump: ConfigDump, f: Filters): Json[] {
  const s = section(dump, DUMP_TYPES.clusters);
  const all = [...(s.static_clusters ?? []), ...(s.dynamic_active_clusters ?? [])].map((c: Json) =>
    c.cluster
  );
  return all.filter((c: Json) => {
    const p = clusterParts(c.name);
    return (!f.fqdn || p.fqdn.includes(f.fqdn)) && (f.port === undefined || Number(p.port) === f.port) &&
      (!f.subset || p.subset.includes(f.subset)) && (!f.direction || p.direction === f.direction);
  });
}

/** istioctl's cluster table. */
export function clustersTable(list: Json[]): string {
  return table(
    ["SERVICE FQDN", "PORT", "SUBSET", "DIRECTION", "TYPE", "DESTINATION RULE"],
    list.map((c) => {
      const p = clusterParts(c.name);
      return [p.fqdn || c.name, p.port, p.subset || "-", p.direction, c.type ?? "", "-"];
    }),
  );
}

/** The listeners, filtered (`--type` is the direction: INBOUND or OUTBOUND). */
export function listeners(dump: ConfigDump, f: Filters): Json[] {
  const s = section(dump, DUMP_TYPES.listeners);
  return (s.dynamic_listeners ?? []).map((l: Json) => l.active_state.listener).filter((l: Json) => {
    const a = l.address.socket_address;
    return (!f.address || a.address === f.address) && (f.port === undefined || a.port_value === f.port) &&
      (!f.type || l.traffic_direction === f.type.toUpperCase());
  });
}

/**
 * The listener table: address, port, direction, the protocol selected for the port (the listener's
 * `protocol.selected`, from the service ports that target it; UNKNOWN is auto-detect; `PER PORT` for the
 * sidecar's outbound listener, whose verbose PROTOCOL FROM lists each service port's decision; `TLS` for a
 * gateway port of PASSTHROUGH servers), the inbound mutual TLS mode, the path
 * normalization in force (the mesh's `pathNormalization`, from the listener's `http_connection_manager`)
 * and, verbose, the deciding mutual TLS policy and the service ports the protocol was selected from.
 */
export function listenersTable(list: Json[], verbose: boolean): string {
  const headers = ["ADDRESSES", "PORT", "DIRECTION", "PROTOCOL", "MTLS", "PATH NORMALIZATION", "DESTINATION"];
  return table(
    verbose ? [...headers, "POLICY", "SCOPE", "PROTOCOL FROM"] : headers,
    list.map((l) => {
      const a = l.address.socket_address;
      const row = [
        a.address,
        String(a.port_value),
        l.traffic_direction,
        l.protocol?.selected ?? "-",
        l.mtls?.mode ?? "-",
        l.http_connection_manager?.path_normalization ?? "-",
        destinationOf(l),
      ];
      const from = (l.protocol?.services ?? []).join(", ") || "-";
      return verbose ? [...row, l.mtls?.policy || "-", l.mtls?.scope || "-", from] : row;
    }),
  );
}

/**
 * Where a listener sends its connections, as istioctl's DESTINATION column: a cluster, a route
 * configuration, or per filter chain its SNI names and clusters (a gateway's PASSTHROUGH server: a
 * tcp_proxy) or route configuration (an HTTPS server); a sidecar's outbound listener goes by the
 * original destination of each captured connection (by Host for one made to the listener itself).
 */
function destinationOf(l: Json): string {
  if (l.default_cluster) return l.default_cluster;
  if (l.route_config_name) return `Route: ${l.route_config_name}`;
  if (!Array.isArray(l.filter_chains)) return "outbound clusters by original destination";
  return l.filter_chains.map((c: Json) => {
    const sni = (c.filter_chain_match?.server_names ?? []).join(",") || "*";
    const clusters = (c.filters?.[0]?.typed_config?.weighted_clusters?.clusters ?? []).map((w: Json) =>
      w.name
    );
    return `SNI ${sni} → ${clusters.length > 0 ? clusters.join(",") : `Route: ${c.route_config_name}`}`;
  }).join("; ");
}

/** The endpoints, one entry per (cluster, endpoint), filtered. */
export function endpoints(dump: ConfigDump, f: Filters): Json[] {
  const s = section(dump, DUMP_TYPES.endpoints);
  const out: Json[] = [];
  for (const e of s.dynamic_endpoint_configs ?? []) {
    const cfg = e.endpoint_config;
    for (const group of cfg.endpoints ?? []) {
      for (const lb of group.lb_endpoints ?? []) {
        const a = lb.endpoint.address.socket_address;
        // No health checking yet: every endpoint is HEALTHY, as Envoy reports them without health checks.
        const entry = {
          cluster: cfg.cluster_name,
          address: a.address,
          port: a.port_value,
          status: "HEALTHY",
          ...lb,
        };
        if (f.address && a.address !== f.address) continue;
        if (f.port !== undefined && a.port_value !== f.port) continue;
        if (f.cluster && cfg.cluster_name !== f.cluster) continue;
        if (f.status && entry.status !== f.status.toUpperCase()) continue;
        out.push(entry);
      }
    }
  }
  return out;
}

/**
 * istioctl's endpoint table, plus the identity checked for mutual TLS: none where the client sends plain
 * text (an unproxied endpoint, or `metadata.tls_mode` "disabled": the server's PeerAuthentication is DISABLE).
 */
export function endpointsTable(list: Json[]): string {
  return table(
    ["ENDPOINT", "STATUS", "OUTLIER CHECK", "CLUSTER", "IDENTITY"],
    list.map((e) => [
      `${e.address}:${e.port}`,
      e.status,
      "OK",
      e.cluster,
      e.metadata?.proxied && e.metadata.tls_mode !== "disabled" ? e.metadata.identity : "- (plain text)",
    ]),
  );
}

/** The route configurations, filtered by name. */
export function routes(dump: ConfigDump, f: Filters): Json[] {
  const s = section(dump, DUMP_TYPES.routes);
  return (s.dynamic_route_configs ?? []).filter((r: Json) => !f.name || r.route_config?.name === f.name);
}

/**
 * istioctl's route table: one row per route of each virtual host (a gateway's; a sidecar has none).
 * MATCH as istioctl prints it (`/status*` prefix, `/ip` exact, regex as written); VIRTUAL SERVICE as
 * `<name>.<namespace>` from the route name `<namespace>/<name>.<rule>`.
 */
export function routesTable(list: Json[]): string {
  const matchText = (m: Json) => m.path ?? m.safe_regex?.regex ?? `${m.prefix ?? "/"}*`;
  const vsOf = (name: string) => {
    const m = /^([^/]+)\/(.+)\.\d+$/.exec(name ?? "");
    return m ? `${m[2]}.${m[1]}` : "-";
  };
  return table(
    ["NAME", "VHOST NAME", "DOMAINS", "MATCH", "VIRTUAL SERVICE"],
    list.flatMap((r) =>
      (r.route_config?.virtual_hosts ?? []).flatMap((v: Json) =>
        (v.routes ?? []).map((route: Json) => [
          r.route_config.name,
          v.name,
          v.domains.join(","),
          (route.match ?? []).map(matchText).join(","),
          vsOf(route.name),
        ])
      )
    ),
  );
}

/** The secrets (workload certificate and root). */
export function secrets(dump: ConfigDump): Json[] {
  return section(dump, DUMP_TYPES.secrets).dynamic_active_secrets ?? [];
}

/** istioctl's secret table, read from the certificates themselves. */
export function secretsTable(list: Json[], now = Date.now()): string {
  return table(
    ["RESOURCE NAME", "TYPE", "STATUS", "VALID CERT", "SERIAL NUMBER", "NOT AFTER", "NOT BEFORE"],
    list.map((s) => {
      const pem = s.secret.tls_certificate?.certificate_chain?.inline_string ??
        s.secret.validation_context?.trusted_ca?.inline_string ?? "";
      const type = s.secret.tls_certificate ? "Cert Chain" : "CA";
      try {
        const cert = new X509Certificate(pem);
        const valid = Date.parse(cert.validFrom) <= now && now <= Date.parse(cert.validTo);
        return [
          s.name,
          type,
          "ACTIVE",
          String(valid),
          cert.serialNumber.toLowerCase(),
          new Date(cert.validTo).toISOString(),
          new Date(cert.validFrom).toISOString(),
        ];
      } catch {
        return [s.name, type, "ACTIVE", "false", "-", "-", "-"];
      }
    }),
  );
}

/** The bootstrap section. */
export function bootstrap(dump: ConfigDump): Json {
  return section(dump, DUMP_TYPES.bootstrap).bootstrap;
}

/** The short bootstrap summary: node, meshd, concurrency and the mesh revision. */
export function bootstrapSummary(dump: ConfigDump): string {
  const b = bootstrap(dump);
  const mesh = dump.configs.find((c) => c["@type"] === DUMP_TYPES.mesh) as Json;
  const ads = b.dynamic_resources?.ads_config?.grpc_services?.[0];
  return [
    `Node: ${b.node.id}`,
    `Discovery: ${ads?.target_uri ?? "-"} (${ads?.tls ? "mutual TLS" : "plain text"})`,
    `Concurrency: ${b.concurrency}`,
    `Config revision: ${mesh?.revision ?? "-"}`,
  ].join("\n") + "\n";
}
