/**
 * Outbound host resolution: which service (and which of its ports) a request is for, from its
 * authority (the absolute-form target's, else the Host header) and the proxy's own namespace, as
 * Kubernetes DNS would resolve the name from a pod of that namespace (search path
 * `<ns>.svc.<domain> svc.<domain> <domain>`, `ndots: 5`). Service VIPs match too. Pure: the answer
 * depends only on the arguments (an index of the services is cached per `services` object).
 *
 * @module
 */
import type { RuntimeSnapshot, ServiceInfo } from "../runtime/snapshot.ts";

/** A service port (ServiceInfo.ports element). */
export type ServicePort = ServiceInfo["ports"][number];

/** The outcome of {@link resolveHost}. */
export type Resolution =
  | {
    ok: true;
    /** `<namespace>/<name>`, the key in `snapshot.services`. */
    key: string;
    service: ServiceInfo;
    port: ServicePort;
    /** The host name (or VIP) that matched, as in the service. */
    host: string;
  }
  | {
    ok: false;
    /** 400 for an authority that is not one, 404 for no such service or port. */
    status: 400 | 404;
    reason: string;
  };

interface Index {
  /** Lower-case host name or VIP -> service key. */
  hosts: Map<string, string>;
  /** Cluster domains seen in `<name>.<ns>.svc.<domain>` hosts (cluster.local first when present). */
  domains: string[];
  /**
   * Answers of {@link resolveHost} that found a service port, by `<default port>|<namespace>|<authority>`:
   * an application sends the same few Hosts on every request. Failures are not kept, and at most
   * RESOLVED_LIMIT answers are, so Hosts an application makes up cannot grow it.
   */
  resolved: Map<string, Resolution & { ok: true }>;
}

const RESOLVED_LIMIT = 1024;

const indexes = new WeakMap<object, Index>();

function indexOf(services: RuntimeSnapshot["services"]): Index {
  let idx = indexes.get(services);
  if (idx !== undefined) return idx;
  const hosts = new Map<string, string>();
  const domains = new Set<string>();
  for (const [key, s] of Object.entries(services)) {
    for (const h of s.hosts) {
      const host = h.toLowerCase().replace(/\.$/, "");
      if (!hosts.has(host)) hosts.set(host, key);
      const prefix = `${s.name}.${s.namespace}.svc.`.toLowerCase();
      if (host.startsWith(prefix) && host.length > prefix.length) domains.add(host.slice(prefix.length));
    }
    for (const a of s.addresses) if (!hosts.has(a.toLowerCase())) hosts.set(a.toLowerCase(), key);
  }
  const list = [...domains].sort((a, b) => (a === "cluster.local" ? -1 : b === "cluster.local" ? 1 : 0));
  idx = { hosts, domains: list.length > 0 ? list : ["cluster.local"], resolved: new Map() };
  indexes.set(services, idx);
  return idx;
}

/** Splits `host[:port]` (IPv6 in brackets); null when malformed. */
export function parseAuthority(
  authority: string,
  defaultPort: number,
): { host: string; port: number } | null {
  const a = authority.trim().toLowerCase();
  if (a === "" || a.includes("@") || /[\s/?#\\]/.test(a)) return null;
  let host: string;
  let rest: string;
  if (a.startsWith("[")) {
    const close = a.indexOf("]");
    if (close < 0) return null;
    host = a.slice(1, close);
    rest = a.slice(close + 1);
    if (!/^[0-9a-f:.]+$/.test(host)) return null;
  } else {
    const colon = a.indexOf(":");
    host = colon < 0 ? a : a.slice(0, colon);
    rest = colon < 0 ? "" : a.slice(colon);
    if (!/^[a-z0-9_.-]+$/.test(host) || host.startsWith(".") || host.includes("..")) return null;
  }
  let port = defaultPort;
  if (rest !== "") {
    if (!/^:[0-9]{1,5}$/.test(rest)) return null;
    port = Number(rest.slice(1));
    if (port < 1 || port > 65535) return null;
  }
  return { host, port };
}

/**
 * The service and port an outbound request is for.
 *
 * @param authority `host[:port]` of the absolute-form target, else the Host header
 * @param namespace the proxy's own namespace (for short names), or undefined when not known yet
 * @param snapshot the services to search
 * @param defaultPort the port when the authority has none (80 for http)
 */
export function resolveHost(
  authority: string,
  namespace: string | undefined,
  snapshot: Pick<RuntimeSnapshot, "services">,
  defaultPort = 80,
): Resolution {
  const resolved = indexOf(snapshot.services).resolved;
  const memo = `${defaultPort}|${namespace ?? ""}|${authority}`;
  const known = resolved.get(memo);
  if (known !== undefined) return known;
  const parsed = parseAuthority(authority, defaultPort);
  if (parsed === null) return { ok: false, status: 400, reason: `invalid host ${JSON.stringify(authority)}` };
  const r = resolveService(parsed, namespace, snapshot);
  if (r.ok && resolved.size < RESOLVED_LIMIT) resolved.set(memo, r);
  return r;
}

/**
 * The service and port of a destination already split into host and port (a gateway route's
 * destination), with the same short-name search as {@link resolveHost}.
 *
 * @param destination lower-case host name or IP, and port
 * @param namespace the proxy's own namespace (for short names), or undefined when not known yet
 * @param snapshot the services to search
 */
export function resolveService(
  destination: { host: string; port: number },
  namespace: string | undefined,
  snapshot: Pick<RuntimeSnapshot, "services">,
): Resolution {
  const { host, port } = destination;
  const found = findService(host, namespace, snapshot);
  if ("tried" in found) {
    return {
      ok: false,
      status: 404,
      reason: `unknown outbound host ${JSON.stringify(`${host}:${port}`)}: no service matches ${
        found.tried.join(", ")
      }${namespace === undefined ? " (proxy namespace not known yet)" : ""}`,
    };
  }
  const { key, host: matched } = found;
  const service = snapshot.services[key];
  const sp = service.ports.find((p) => p.number === port);
  if (sp === undefined) {
    return {
      ok: false,
      status: 404,
      reason: `service ${key} (${matched}) has no port ${port}; its ports: ${
        service.ports.map((p) => p.number).join(", ") || "none"
      }`,
    };
  }
  return { ok: true, key, service, port: sp, host: matched };
}

/**
 * The service a host name (or VIP) is, with the same search as {@link resolveHost}: its key and
 * the host that matched, or the names tried.
 *
 * @param host lower-case host name or IP
 */
export function findService(
  host: string,
  namespace: string | undefined,
  snapshot: Pick<RuntimeSnapshot, "services">,
): { key: string; host: string } | { tried: string[] } {
  const idx = indexOf(snapshot.services);
  const tried: string[] = [];
  for (const name of candidates(host, namespace, idx.domains)) {
    tried.push(name);
    const key = idx.hosts.get(name);
    if (key !== undefined) return { key, host: name };
  }
  return { tried };
}

/** The names to look up, in order: Kubernetes DNS with `ndots: 5`. */
function candidates(host: string, namespace: string | undefined, domains: string[]): string[] {
  if (host.endsWith(".")) return [host.slice(0, -1)];
  if (host.includes(":") || /^[0-9.]+$/.test(host)) return [host];
  const search: string[] = [];
  for (const d of domains) {
    if (namespace) search.push(`${host}.${namespace}.svc.${d}`);
    search.push(`${host}.svc.${d}`, `${host}.${d}`);
  }
  const dots = host.split(".").length - 1;
  return dots >= 5 ? [host, ...search] : [...search, host];
}
