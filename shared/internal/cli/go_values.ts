/**
 * Go's value syntax for flags and environment variables, as Istio's programs read them (meshd seed,
 * "`meshd discovery` flags" and "Environment variables"): bool as strconv.ParseBool, int as
 * strconv.ParseInt with base 0 or Atoi, float as ParseFloat (decimal forms only), duration as
 * time.ParseDuration (milliseconds here), and listen addresses as net.SplitHostPort. Each parser
 * returns a value or the reason the text is not one, so that callers can name the flag or variable
 * and report every bad value at once.
 *
 * @module
 */
import { parseDuration } from "../../api/schemas/duration.ts";

/** A parsed value, or why the text is not one (a phrase that follows the quoted text). */
export type ValueResult<T> = { ok: true; value: T } | { ok: false; reason: string };

const GO_TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const GO_FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/** Go's strconv.ParseBool, which both pflag's bool flags and Istio's bool variables use. */
export function parseGoBool(text: string): ValueResult<boolean> {
  if (GO_TRUE.has(text)) return { ok: true, value: true };
  if (GO_FALSE.has(text)) return { ok: true, value: false };
  return { ok: false, reason: "is not a boolean; use true or false (or 1, 0, t, f, TRUE, FALSE)" };
}

/** Go's largest duration, 2562047h47m16.854775807s, in nanoseconds. */
const MAX_DURATION_NS = 2n ** 63n - 1n;

/**
 * Go's time.ParseDuration, in milliseconds: `parseDuration` of shared/ plus Go's range check and a
 * reason for each failure.
 */
export function parseGoDuration(text: string): ValueResult<number> {
  const ns = parseDuration(text);
  if (ns === undefined) {
    const unitless = /^[+-]?(\d+\.?\d*|\.\d+)$/.test(text);
    return {
      ok: false,
      reason: `is not a duration${
        unitless ? ": missing unit" : ""
      }; use Go syntax, for example 500ms, 30s, 1h0m0s`,
    };
  }
  if (ns > MAX_DURATION_NS || ns < -MAX_DURATION_NS - 1n) {
    return { ok: false, reason: "is out of range; the largest duration is 2562047h47m16.854775807s" };
  }
  return { ok: true, value: Number(ns) / 1e6 };
}

/**
 * A whole number as JavaScript holds it exactly. Go's int64 goes further, but no setting here needs
 * such values, and rounding them silently would be worse than refusing them.
 */
export function safeInteger(value: bigint): ValueResult<number> {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    return { ok: false, reason: `is out of range ${Number.MIN_SAFE_INTEGER}..${Number.MAX_SAFE_INTEGER}` };
  }
  return { ok: true, value: Number(value) };
}

/** Go's strconv.Atoi: decimal digits with an optional sign. */
export function parseGoAtoi(text: string): ValueResult<number> {
  if (!/^[+-]?\d+$/.test(text)) return { ok: false, reason: "is not an integer" };
  return safeInteger(BigInt(text));
}

const GO_INT =
  /^([+-]?)(0[xX](?:_?[0-9a-fA-F])+|0[bB](?:_?[01])+|0[oO](?:_?[0-7])+|0(?:_?[0-7])+|0|[1-9](?:_?\d)*)$/;

/**
 * Go's strconv.ParseInt/ParseUint with base 0, as pflag's int and uint16 use: `42`, `0x2a`, `0o52`,
 * `052`, `1_000`. A `min` of 0 or more makes it unsigned (a sign is refused).
 */
export function parseGoInt(text: string, min: bigint, max: bigint): ValueResult<bigint> {
  const m = GO_INT.exec(text);
  if (!m || (min >= 0n && m[1] === "-")) {
    return { ok: false, reason: min >= 0n ? "is not an unsigned integer" : "is not an integer" };
  }
  let digits = m[2].replaceAll("_", "");
  if (/^0[0-7]/.test(digits)) digits = `0o${digits.slice(1)}`;
  const value = m[1] === "-" ? -BigInt(digits) : BigInt(digits);
  if (value < min || value > max) return { ok: false, reason: `is out of range ${min}..${max}` };
  return { ok: true, value };
}

/** Bounds of Go's int32 (klog's Level, `--vklog`). */
export const INT32_MIN = -(2n ** 31n);
/** Upper bound of Go's int32. */
export const INT32_MAX = 2n ** 31n - 1n;

/** Go's strconv.ParseFloat for decimal text (`80`, `0.5`, `1e3`); Inf, NaN and hex forms are refused. */
export function parseDecimal(text: string): ValueResult<number> {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) {
    return { ok: false, reason: "is not a decimal number, for example 0.5 or 80" };
  }
  const value = Number(text);
  if (!Number.isFinite(value)) return { ok: false, reason: "is out of range" };
  return { ok: true, value };
}

/** A value as error messages show it: bare when plain, JSON-quoted when empty or odd. */
export function showValue(text: string): string {
  return /^[\w.:/*@+,=~-]+$/.test(text) ? text : JSON.stringify(text);
}

/** A host name: dot-separated labels of letters, digits and inner '-'. */
export const HOST_NAME =
  /^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$/;
/** An IPv6 address (loosely: what may sit between brackets), with an optional zone. */
export const IPV6 = /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(%[\w.-]+)?$/;

/** A listening address: `host:port` or `:port` (meshd seed, "Listening addresses"). */
export interface ListenAddress {
  /** Host name or IP, IPv6 without brackets; empty for every interface. */
  host: string;
  /** 0 to 65535; 0 lets the system choose. */
  port: number;
}

/** Go's net.SplitHostPort plus a numeric port: `host:port`, `[v6]:port` or `:port`. */
export function parseListenAddress(text: string): ValueResult<ListenAddress> {
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):([^:]*)$/.exec(text);
  if (!m) return { ok: false, reason: "is not an address; use host:port or :port" };
  const host = m[1] ?? m[2];
  if (m[1] !== undefined ? !IPV6.test(host) : host !== "" && !HOST_NAME.test(host)) {
    return { ok: false, reason: `has an invalid host ${showValue(host)}` };
  }
  if (!/^\d+$/.test(m[3])) {
    return { ok: false, reason: `has port ${showValue(m[3])}; a port is a number 0..65535` };
  }
  const port = Number(m[3]);
  if (port > 65535) return { ok: false, reason: `has port ${m[3]}, out of range 0..65535` };
  return { ok: true, value: { host, port } };
}

/**
 * A value from a fixed set, for string settings whose seed lists their values; the reason names the
 * accepted values.
 */
export function parseOneOf(text: string, accepted: readonly string[]): ValueResult<string> {
  if (accepted.includes(text)) return { ok: true, value: text };
  return { ok: false, reason: `is not accepted; use ${accepted.map(showValue).join(", ")}` };
}
