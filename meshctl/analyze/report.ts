/**
 * What `meshctl analyze` does with messages: suppressions (`--suppress <code>=<resource>` with `*`
 * wildcards, and the `galley.istio.io/analyze-suppress` annotation), thresholds, and the output
 * formats `log`, `json` and `yaml`, as istioctl prints them.
 *
 * @module
 */
import { stringify } from "yaml";
import type { AnalysisMessage } from "./analyzers.ts";
import type { AnalyzedResource } from "./input.ts";
import { MESSAGES_BY_CODE, render } from "./messages.ts";

/** A parsed `--suppress` value. */
export interface Suppression {
  code: string;
  /** Glob over `<Kind> <namespace>/<name>` or `<Kind> <name>.<namespace>`. */
  resource: string;
}

/** Annotations that suppress codes on the resource carrying them (comma-separated codes, or `*`). */
export const SUPPRESS_ANNOTATIONS: readonly string[] = [
  "galley.istio.io/analyze-suppress",
  "analysis.mesh.io/suppress",
];

/**
 * Parses `--suppress` values.
 *
 * @returns the suppressions, and a warning for each unknown code (which then has no effect)
 * @throws Error naming the value when it is not `<code>=<resource>`
 */
export function parseSuppressions(values: string[]): { suppressions: Suppression[]; warnings: string[] } {
  const suppressions: Suppression[] = [];
  const warnings: string[] = [];
  for (const v of values) {
    const eq = v.indexOf("=");
    if (eq <= 0 || eq === v.length - 1) {
      throw new Error(
        `--suppress: ${JSON.stringify(v)} is not <code>=<resource>, e.g. "IST0127=AuthorizationPolicy foo/*"`,
      );
    }
    const code = v.slice(0, eq).trim();
    if (!MESSAGES_BY_CODE.has(code)) {
      warnings.push(
        `Warning: Supplied message code '${code}' is an unknown message code and will not have any effect.`,
      );
    }
    suppressions.push({ code, resource: v.slice(eq + 1).trim() });
  }
  return { suppressions, warnings };
}

function glob(pattern: string, text: string): boolean {
  const re = new RegExp(
    "^" + pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$",
  );
  return re.test(text);
}

/** `<Kind> <namespace>/<name>` (`<Kind> <name>` when cluster-scoped), as istioctl names a resource. */
export function originOf(m: AnalysisMessage): string | undefined {
  const r = m.resource;
  if (!r) return undefined;
  // A cluster-scoped object (a Namespace) has no namespace part.
  return r.namespace ? `${r.kind} ${r.namespace}/${r.name}` : `${r.kind} ${r.name}`;
}

/** Drops suppressed messages. */
export function applySuppressions(
  messages: AnalysisMessage[],
  suppressions: Suppression[],
  resources: AnalyzedResource[],
): AnalysisMessage[] {
  const annotated = new Map<string, string[]>();
  for (const r of resources) {
    const annotations = (r.resource.metadata.annotations ?? {}) as Record<string, string>;
    const codes = SUPPRESS_ANNOTATIONS.flatMap((a) => annotations[a]?.split(",").map((c) => c.trim()) ?? []);
    if (codes.length > 0) annotated.set(`${r.kind} ${r.namespace}/${r.name}`, codes);
  }
  return messages.filter((m) => {
    const origin = originOf(m);
    if (!origin) return true;
    const codes = annotated.get(origin) ?? [];
    if (codes.includes("*") || codes.includes(m.type.code)) return false;
    const { kind, namespace, name } = m.resource!;
    const dotted = `${kind} ${name}.${namespace}`;
    return !suppressions.some((s) =>
      s.code === m.type.code && (glob(s.resource, origin) || glob(s.resource, dotted))
    );
  });
}

/** One message as JSON and YAML show it (istioctl's fields). */
export function messageRecord(m: AnalysisMessage): Record<string, string> {
  const out: Record<string, string> = { code: m.type.code, level: m.type.level };
  const origin = originOf(m);
  if (origin) out.origin = origin;
  if (m.reference) out.reference = m.reference;
  out.message = render(m.type.template, m.params);
  if (m.type.code.startsWith("IST")) {
    out.documentationUrl =
      `https://istio.io/latest/docs/reference/config/analysis/${m.type.code.toLowerCase()}/?ref=meshctl-analyze`;
  }
  return out;
}

const COLOURS: Record<string, string> = { Warning: "\x1b[33m", Error: "\x1b[1;31m" };

/** One message as a log line: `Error [IST0101] (Kind ns/name file:line) text`, optionally coloured. */
export function logLine(m: AnalysisMessage, colour: boolean): string {
  const prefix = colour ? COLOURS[m.type.level] ?? "" : "";
  const level = prefix ? `${prefix}${m.type.level}\x1b[0m` : m.type.level;
  const origin = originOf(m);
  const where = origin ? ` (${origin}${m.reference ? ` ${m.reference}` : ""})` : "";
  return `${level} [${m.type.code}]${where} ${render(m.type.template, m.params)}`;
}

/** The output formats of `-o`. */
export const OUTPUT_FORMATS = ["log", "json", "yaml"] as const;

/** The output formats. */
export type OutputFormat = typeof OUTPUT_FORMATS[number];

/** Formats messages; `log` ends each line with a newline, json and yaml are one document. */
export function formatMessages(messages: AnalysisMessage[], format: OutputFormat, colour: boolean): string {
  if (format === "json") return JSON.stringify(messages.map(messageRecord), null, 2) + "\n";
  if (format === "yaml") return messages.length === 0 ? "[]\n" : stringify(messages.map(messageRecord));
  return messages.map((m) => logLine(m, colour) + "\n").join("");
}
