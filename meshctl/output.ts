/**
 * Output helpers shared by meshctl's inspect commands: aligned tables (istioctl's tabwriter look),
 * JSON and YAML, and a line diff.
 *
 * @module
 */
import { stringify } from "yaml";

/** Columns separated by at least three spaces, as istioctl's tabwriter prints them. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] + 3))).join("").trimEnd() + "\n";
  return line(headers) + rows.map(line).join("");
}

/** A value as `json` (two-space indent) or `yaml`. */
export function structured(value: unknown, format: "json" | "yaml"): string {
  return format === "json" ? JSON.stringify(value, null, 2) + "\n" : stringify(value);
}

/** JSON with object keys sorted, one field per line: a stable text to diff. */
export function canonicalJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v && typeof v === "object") {
      return Object.fromEntries(
        Object.keys(v).sort().map((k) => [k, sort((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return JSON.stringify(sort(value), null, 2);
}

/**
 * A unified-style line diff (`-` only in `a`, `+` only in `b`, two spaces for both), by longest
 * common subsequence; meant for the small texts of one proxy's config.
 *
 * @returns the diff lines, or an empty array when the texts are equal
 */
export function lineDiff(a: string, b: string): string[] {
  if (a === b) return [];
  const x = a.split("\n");
  const y = b.split("\n");
  const lcs: number[][] = Array.from({ length: x.length + 1 }, () => new Array(y.length + 1).fill(0));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      out.push(`  ${x[i++]}`);
      j++;
    } else if (j < y.length && (i === x.length || lcs[i][j + 1] > lcs[i + 1][j])) {
      out.push(`+ ${y[j++]}`);
    } else {
      out.push(`- ${x[i++]}`);
    }
  }
  return out;
}
