/**
 * `meshctl bug-report`'s `--include`/`--exclude` specs (meshctl seed, "bug-report"; istioctl's
 * pkg/bugreport/config): `<namespaces>/<deployments>/<pods>/<labels>/<annotations>/<containers>`.
 * Commas inside a part mean OR, parts are ANDed, every part is optional (trailing parts may be
 * omitted, any part left empty). Names take `*` globs; labels and annotations are `key=value` (or `key`
 * alone: present) with globs on the value only. A container's log is kept when it matches at least
 * one include (or there are none) and no exclude.
 *
 * @module
 */

/** One parsed spec. */
export interface LogSpec {
  namespaces: string[];
  deployments: string[];
  pods: string[];
  labels: [string, string | undefined][];
  annotations: [string, string | undefined][];
  containers: string[];
}

/** What a spec is matched against: one container of one pod. */
export interface LogTarget {
  namespace: string;
  /** The owning Deployment's name, when known. */
  deployment?: string;
  pod: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  container: string;
}

/** The seed's default `--exclude`: the orchestrator's four system namespaces. */
export const DEFAULT_EXCLUDE = "kube-system,kube-public,kube-node-lease,local-path-storage";

const list = (part: string | undefined): string[] =>
  (part ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");

function pairs(part: string | undefined): [string, string | undefined][] {
  return list(part).map((p) => {
    const eq = p.indexOf("=");
    return eq < 0 ? [p, undefined] : [p.slice(0, eq), p.slice(eq + 1)];
  });
}

/**
 * Parses one spec.
 *
 * @throws Error naming the spec when it has more than six parts
 */
export function parseLogSpec(spec: string): LogSpec {
  const parts = spec.split("/");
  if (parts.length > 6) {
    throw new Error(
      `bad spec "${spec}": at most 6 parts, <namespaces>/<deployments>/<pods>/<labels>/<annotations>/<containers>`,
    );
  }
  return {
    namespaces: list(parts[0]),
    deployments: list(parts[1]),
    pods: list(parts[2]),
    labels: pairs(parts[3]),
    annotations: pairs(parts[4]),
    containers: list(parts[5]),
  };
}

/** A `*` glob matched against the whole text. */
export function globMatch(pattern: string, text: string): boolean {
  const re = new RegExp(
    "^" + pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$",
  );
  return re.test(text);
}

const anyGlob = (patterns: string[], text: string | undefined) =>
  patterns.length === 0 || (text !== undefined && patterns.some((p) => globMatch(p, text)));

const anyPair = (wanted: [string, string | undefined][], have: Record<string, string>) =>
  wanted.length === 0 ||
  wanted.some(([k, v]) => Object.hasOwn(have, k) && (v === undefined || globMatch(v, have[k])));

/** Whether a spec matches a container (every given part matches). */
export function specMatches(spec: LogSpec, t: LogTarget): boolean {
  return anyGlob(spec.namespaces, t.namespace) && anyGlob(spec.deployments, t.deployment) &&
    anyGlob(spec.pods, t.pod) && anyPair(spec.labels, t.labels) && anyPair(spec.annotations, t.annotations) &&
    anyGlob(spec.containers, t.container);
}

/** Whether a container's log is kept: some include (or none given) and no exclude. */
export function logSelected(includes: LogSpec[], excludes: LogSpec[], t: LogTarget): boolean {
  return (includes.length === 0 || includes.some((s) => specMatches(s, t))) &&
    !excludes.some((s) => specMatches(s, t));
}
