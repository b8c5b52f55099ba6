/**
 * Durations as Istio reads them in its CRDs: Go's time.ParseDuration (`1m30s`, `500ms`), which
 * includes the protobuf JSON form (`1.5s`); and Istio's agent.ValidateDuration (at least 1ms, in
 * whole milliseconds).
 *
 * @module
 */
import { error, type FieldPath, type Finding } from "../finding.ts";

const UNIT_NANOS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  "\u00b5s": 1_000n,
  "\u03bcs": 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const DURATION_PART = /([0-9]*)(?:\.([0-9]*))?(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/y;

/**
 * Parses a duration the way Istio's decoder does (Go's time.ParseDuration): `5s`, `0.5s`, `1.5s`,
 * `500ms`, `1m30s`, `24h`, optionally signed.
 *
 * @returns nanoseconds, or undefined when the text is not a duration
 */
export function parseDuration(text: string): bigint | undefined {
  let s = text;
  let sign = 1n;
  if (s.startsWith("-") || s.startsWith("+")) {
    if (s[0] === "-") sign = -1n;
    s = s.slice(1);
  }
  if (s === "0") return 0n;
  if (s === "") return undefined;
  let total = 0n;
  DURATION_PART.lastIndex = 0;
  while (DURATION_PART.lastIndex < s.length) {
    const start = DURATION_PART.lastIndex;
    const m = DURATION_PART.exec(s);
    if (!m || m.index !== start) return undefined;
    const [, whole, frac = "", unit] = m;
    if (whole === "" && frac === "") return undefined;
    const scale = UNIT_NANOS[unit];
    total += BigInt(whole || "0") * scale;
    if (frac !== "") total += BigInt(frac) * scale / 10n ** BigInt(frac.length);
  }
  return sign * total;
}

/**
 * Istio's ValidateDuration on a duration field: a duration string of at least 1ms, in whole
 * milliseconds.
 *
 * @param secondsOnly also require whole seconds (CorsPolicy.maxAge)
 */
export function checkDuration(value: unknown, at: FieldPath, secondsOnly = false): Finding[] {
  if (typeof value !== "string") return [];
  const ns = parseDuration(value);
  if (ns === undefined) {
    return [
      error(
        at,
        `"${value}" is not a duration; write a number with a unit, e.g. "5s", "0.5s", "500ms", "1m30s"`,
      ),
    ];
  }
  if (ns < 1_000_000n) return [error(at, `duration "${value}" must be at least 1ms`)];
  if (ns % 1_000_000n !== 0n) {
    return [error(at, `duration "${value}" is finer than 1ms; only millisecond precision is supported`)];
  }
  if (secondsOnly && ns % 1_000_000_000n !== 0n) {
    return [error(at, `duration "${value}" must be whole seconds`)];
  }
  return [];
}
