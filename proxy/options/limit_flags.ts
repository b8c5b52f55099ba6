/**
 * The flags of `proxy` that bound slow or greedy clients on every listener (inbound, outbound and
 * gateway): Envoy's `request_headers_timeout` and `request_timeout`, the HTTP `idle_timeout` and a
 * listener connection limit. Defaults and their reasons: proxy/docs/limits.md.
 *
 * @module
 */
import { parseDuration } from "../../shared/api/schemas/duration.ts";
import { DEFAULT_LISTENER_LIMITS, type ListenerLimits } from "../http/conn_limits.ts";
import type { ProxyFlag } from "./flag.ts";

/** Go-style text of a default in ms, as `--help` shows it (`10s`, `5m0s`). */
function goDuration(ms: number): string {
  const s = ms / 1000;
  return s >= 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`;
}

/** The limit flags, in `--help` order. */
export const LIMIT_FLAGS: readonly ProxyFlag[] = [
  {
    name: "requestHeadersTimeout",
    value: "<duration>",
    description: "time for a complete request head on every listener, counted from the accept for a " +
      "connection's first request (TLS handshake included) and from the first byte of the head for later " +
      "ones; then 408 (or a close when no byte came) and downstream_rq_header_timeout (Envoy's " +
      "request_headers_timeout); 0s disables",
    default: goDuration(DEFAULT_LISTENER_LIMITS.requestHeadersTimeoutMs),
  },
  {
    name: "requestTimeout",
    value: "<duration>",
    description: "time for a whole request on every listener, from the first byte of its head until " +
      "the last byte of its body was received or the response began; then 408 `request timeout`, the " +
      "upstream request reset, and downstream_rq_timeout (Envoy's request_timeout; each HTTP/2 stream " +
      "likewise, gRPC getting UNKNOWN). Bounds slow request " +
      "bodies (R-U-Dead-Yet), but also every upload: an upload must fit in it. 0s (the default, as in " +
      "Envoy and Istio) disables it; see proxy/README.md, Limits",
    default: goDuration(DEFAULT_LISTENER_LIMITS.requestTimeoutMs),
  },
  {
    name: "idleTimeout",
    value: "<duration>",
    description: "a downstream connection with no byte received or sent for this long is closed, " +
      "between requests or during one (Envoy's idle_timeout and stream_idle_timeout; " +
      "downstream_cx_idle_timeout); 0s disables",
    default: goDuration(DEFAULT_LISTENER_LIMITS.idleTimeoutMs),
  },
  {
    name: "maxConnections",
    value: "<n>",
    description: "open downstream connections per listener, all worker threads together; more are " +
      "closed at accept and counted as downstream_cx_overflow; 0: no limit (mind ulimit -n)",
    default: String(DEFAULT_LISTENER_LIMITS.maxConnections),
  },
];

/** The largest timeout accepted: a day (a longer one is no protection). */
const MAX_TIMEOUT_MS = 86_400_000;
/** The largest connection limit accepted: well above any file descriptor limit. */
const MAX_CONNECTIONS = 10_000_000;

/**
 * Reads the limit flags.
 *
 * @param text a flag's text as given, or its default
 * @param err records a bad value: flag name, value, reason
 * @returns the limits; a bad value keeps its default (its error is recorded)
 */
export function validateLimitFlags(
  text: (name: string) => string | undefined,
  err: (name: string, value: string, reason: string) => void,
): ListenerLimits {
  const limits: ListenerLimits = { ...DEFAULT_LISTENER_LIMITS };
  const timeout = (name: string): number | undefined => {
    const value = text(name)!;
    const ns = parseDuration(value);
    if (ns === undefined) {
      err(name, value, "is not a duration; use Go syntax, for example 10s, 500ms, 5m0s (0s disables)");
      return undefined;
    }
    const ms = Number(ns / 1_000_000n);
    if (ns < 0n || ms > MAX_TIMEOUT_MS || (ns > 0n && ms === 0)) {
      err(name, value, "is out of range 1ms..24h (or 0s to disable)");
      return undefined;
    }
    return ms;
  };
  limits.requestHeadersTimeoutMs = timeout("requestHeadersTimeout") ?? limits.requestHeadersTimeoutMs;
  limits.requestTimeoutMs = timeout("requestTimeout") ?? limits.requestTimeoutMs;
  limits.idleTimeoutMs = timeout("idleTimeout") ?? limits.idleTimeoutMs;
  const max = text("maxConnections")!;
  if (!/^\d{1,8}$/.test(max) || Number(max) > MAX_CONNECTIONS) {
    err("maxConnections", max, `is not a whole number 0..${MAX_CONNECTIONS} (0: no limit)`);
  } else limits.maxConnections = Number(max);
  return limits;
}
