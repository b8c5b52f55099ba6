/**
 * Duration strings as Istio accepts them in its CRDs: Go-style (`1m30s`, `500ms`, `1.5s`), which
 * includes the protobuf JSON form (`1.5s`).
 *
 * @module
 */

const DURATION = /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/;
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a duration string to milliseconds.
 *
 * @returns milliseconds, or undefined when the string is not a duration
 */
export function parseDuration(text: string): number | undefined {
  if (typeof text !== "string" || !DURATION.test(text)) return undefined;
  let ms = 0;
  for (const m of text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g)) {
    ms += Number(m[1]) * UNIT_MS[m[2]];
  }
  return ms;
}
