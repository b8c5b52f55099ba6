/**
 * The application probers the injector hands to the proxy: Istio's `ISTIO_KUBE_APP_PROBERS`
 * (istio/istio pilot/cmd/pilot-agent/status, `KubeAppProbers`: JSON, a map from the status port's
 * path `/app-health/<container>/livez|readyz|startupz` to the container's original probe
 * `{httpGet|tcpSocket|grpc, timeoutSeconds}`, named ports already resolved). meshd's injector writes it
 * (shared/internal/inject/probe_rewrite.ts); the proxy's status listener reads it (proxy/status/). Pure.
 *
 * Stricter than Istio, because the proxy performs these probes for anyone who reaches the status port:
 * only numeric ports, a path that is a request target with no space or control character, header names
 * that are HTTP tokens and values without CR, LF or NUL, and no `host` other than the pod's loopback
 * (the proxy only ever probes 127.0.0.1).
 *
 * @module
 */

/** The environment variable, Istio's name (pilot-agent reads the same). */
export const KUBE_APP_PROBERS_ENV = "ISTIO_KUBE_APP_PROBERS";
/** Istio's pilot-agent status port, where the rewritten probes point. */
export const DEFAULT_STATUS_PORT = 15020;
/** The probe kinds and their path suffix (Istio's `FormatProberURL`). */
export const PROBE_KINDS = {
  livenessProbe: "livez",
  readinessProbe: "readyz",
  startupProbe: "startupz",
} as const;

/** A probe field of a Kubernetes container. */
export type ProbeField = keyof typeof PROBE_KINDS;

/** `httpGet` of a prober: Kubernetes' HTTPGetAction with the port resolved to a number. */
export interface HttpGetProber {
  path: string;
  port: number;
  scheme?: "HTTP" | "HTTPS";
  /** Only loopback (kept as the Kubernetes field, not used to connect). */
  host?: string;
  httpHeaders?: { name: string; value: string }[];
}

/** One original probe. Exactly one of httpGet, tcpSocket, grpc. */
export interface AppProber {
  httpGet?: HttpGetProber;
  tcpSocket?: { port: number; host?: string };
  grpc?: { port: number; service?: string };
  /** Seconds; Kubernetes' default 1. */
  timeoutSeconds?: number;
}

/** Path -> prober. */
export type AppProbers = Record<string, AppProber>;

/** `/app-health/<container>/<livez|readyz|startupz>`. */
export function proberPath(container: string, field: ProbeField): string {
  return `/app-health/${container}/${PROBE_KINDS[field]}`;
}

const PATH_KEY = /^\/app-health\/[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\/(livez|readyz|startupz)$/;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A request target's path and query: visible ASCII only (no space, no control character). */
const TARGET = /^[\x21-\x7e]*$/;
const LOOPBACK = new Set(["", "localhost", "127.0.0.1", "::1", "[::1]"]);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function portOf(v: unknown, field: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 65535) {
    throw new Error(`${field}: must be a port number 1..65535 (named ports are resolved by the injector)`);
  }
  return v;
}

function loopbackHost(v: unknown, field: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "string" || !LOOPBACK.has(v)) {
    throw new Error(`${field}: only the pod's own loopback is probed (localhost, 127.0.0.1, ::1)`);
  }
  return v;
}

function httpGet(v: unknown, field: string): HttpGetProber {
  if (!isObject(v)) throw new Error(`${field}: must be an object`);
  const path = v.path ?? "/";
  if (typeof path !== "string" || !TARGET.test(path)) {
    throw new Error(`${field}.path: must be a path of visible ASCII characters (no space or control)`);
  }
  const out: HttpGetProber = {
    // Kubelet adds the leading slash too.
    path: path.startsWith("/") ? path : `/${path}`,
    port: portOf(v.port, `${field}.port`),
  };
  const scheme = v.scheme ?? "HTTP";
  if (scheme !== "HTTP" && scheme !== "HTTPS") throw new Error(`${field}.scheme: must be HTTP or HTTPS`);
  out.scheme = scheme;
  const host = loopbackHost(v.host, `${field}.host`);
  if (host !== undefined) out.host = host;
  if (v.httpHeaders !== undefined) {
    if (!Array.isArray(v.httpHeaders)) throw new Error(`${field}.httpHeaders: must be a list`);
    out.httpHeaders = v.httpHeaders.map((h, i) => {
      const at = `${field}.httpHeaders[${i}]`;
      if (!isObject(h) || typeof h.name !== "string" || !TOKEN.test(h.name)) {
        throw new Error(`${at}.name: must be an HTTP header name`);
      }
      if (typeof h.value !== "string" || /[\r\n\0]/.test(h.value)) {
        throw new Error(`${at}.value: must be a string without CR, LF or NUL`);
      }
      return { name: h.name, value: h.value };
    });
  }
  return out;
}

function prober(v: unknown, field: string): AppProber {
  if (!isObject(v)) throw new Error(`${field}: must be an object`);
  const kinds = ["httpGet", "tcpSocket", "grpc"].filter((k) => v[k] !== undefined && v[k] !== null);
  if (kinds.length !== 1) throw new Error(`${field}: must have exactly one of httpGet, tcpSocket, grpc`);
  const out: AppProber = {};
  if (kinds[0] === "httpGet") out.httpGet = httpGet(v.httpGet, `${field}.httpGet`);
  else if (kinds[0] === "tcpSocket") {
    const t = v.tcpSocket;
    if (!isObject(t)) throw new Error(`${field}.tcpSocket: must be an object`);
    out.tcpSocket = { port: portOf(t.port, `${field}.tcpSocket.port`) };
    loopbackHost(t.host, `${field}.tcpSocket.host`);
  } else {
    const g = v.grpc;
    if (!isObject(g)) throw new Error(`${field}.grpc: must be an object`);
    out.grpc = { port: portOf(g.port, `${field}.grpc.port`) };
    if (g.service !== undefined && g.service !== null) {
      if (typeof g.service !== "string") throw new Error(`${field}.grpc.service: must be a string`);
      out.grpc.service = g.service;
    }
  }
  if (v.timeoutSeconds !== undefined) {
    const t = v.timeoutSeconds;
    if (typeof t !== "number" || !Number.isInteger(t) || t < 1 || t > 3600) {
      throw new Error(`${field}.timeoutSeconds: must be a whole number 1..3600`);
    }
    out.timeoutSeconds = t;
  }
  return out;
}

/**
 * Parses and checks the JSON of {@link KUBE_APP_PROBERS_ENV}.
 *
 * @param source names the text in errors (e.g. the variable's name)
 * @throws Error `<source>: <path key>.<field>: <reason>` for JSON that does not parse, a key that is not
 *   `/app-health/<container>/<livez|readyz|startupz>`, or a prober that breaks the rules above
 */
export function parseAppProbers(text: string, source: string): AppProbers {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new Error(`${source}: not JSON: ${(e as Error).message}`);
  }
  if (!isObject(doc)) throw new Error(`${source}: must be a JSON object (path \u2192 prober)`);
  const out: AppProbers = {};
  for (const [key, value] of Object.entries(doc)) {
    if (!PATH_KEY.test(key)) {
      throw new Error(
        `${source}: ${JSON.stringify(key)}: must be /app-health/<container>/<livez|readyz|startupz>`,
      );
    }
    try {
      out[key] = prober(value, key);
    } catch (e) {
      throw new Error(`${source}: ${(e as Error).message}`);
    }
  }
  return out;
}
