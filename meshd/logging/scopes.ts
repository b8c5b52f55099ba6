/**
 * meshd's logging scopes and levels (meshd seed, "`meshd discovery` flags": the scopes valid in
 * `--log_caller`, `--log_output_level` and `--log_stacktrace_level`, and the levels), and the parsers
 * of those three flags.
 *
 * @module
 */

/** Every scope name the seed lists, including `all`, which stands for every scope. */
export const SCOPE_NAMES = [
  "ads",
  "adsc",
  "all",
  "analysis",
  "authn",
  "authorization",
  "ca",
  "controllers",
  "default",
  "delta",
  "deltaadsc",
  "file",
  "fullpush",
  "gateway",
  "grpc",
  "grpcgen",
  "ingress status",
  "ip-autoallocate",
  "klog",
  "krt",
  "kube",
  "model",
  "monitor",
  "monitoring",
  "pkica",
  "pkira",
  "probes",
  "processing",
  "retry",
  "rootcertrotator",
  "secretcontroller",
  "security",
  "serverca",
  "serviceentry",
  "spiffe",
  "status",
  "trustBundle",
  "untaint",
  "validation",
  "validationController",
  "validationServer",
  "wasm",
  "wle",
] as const;

/** The scope name that selects every scope, as Istio's `all` override does. */
export const ALL_SCOPES = "all";

/** A scope a logger writes to: every seed scope but {@link ALL_SCOPES}. */
export type ScopeName = Exclude<typeof SCOPE_NAMES[number], typeof ALL_SCOPES>;

/** The scopes a logger writes to, in the seed's order. */
export const SCOPES: readonly ScopeName[] = SCOPE_NAMES.filter((s): s is ScopeName => s !== ALL_SCOPES);

/** The scope of messages that belong to no subsystem; its lines carry no scope column, as in Istio. */
export const DEFAULT_SCOPE: ScopeName = "default";

/** The levels of the seed, from the most verbose to `none`, which turns a scope off. */
export const LEVELS = ["debug", "info", "warn", "error", "fatal", "none"] as const;

/** One of {@link LEVELS}. */
export type LevelName = typeof LEVELS[number];

/**
 * Each level's rank. A message is written when its rank is at most the scope's output rank, so a
 * disabled call costs one number comparison; `none` (0) is below every message level.
 */
export const LEVEL_RANK: Readonly<Record<LevelName, number>> = {
  none: 0,
  fatal: 1,
  error: 2,
  warn: 3,
  info: 4,
  debug: 5,
};

/** The level of each rank, the inverse of {@link LEVEL_RANK}. */
export const RANK_LEVEL: readonly LevelName[] = ["none", "fatal", "error", "warn", "info", "debug"];

/** A per-scope level setting parsed from a flag; scopes it does not name keep their level. */
export type ScopedLevels = Partial<Record<ScopeName, LevelName>>;

/** What a flag parser returns: the value, and one message per bad item (empty when valid). */
export interface Parsed<T> {
  value: T;
  errors: string[];
}

function isLevel(text: string): text is LevelName {
  return (LEVELS as readonly string[]).includes(text);
}

function isScope(text: string): text is ScopeName | typeof ALL_SCOPES {
  return (SCOPE_NAMES as readonly string[]).includes(text);
}

const SCOPE_LIST = SCOPE_NAMES.map((s) => JSON.stringify(s)).join(", ");

/**
 * Parses `--log_output_level` or `--log_stacktrace_level`: comma-separated `<scope>:<level>` items.
 * A bare level and the scope `all` apply to every scope; items apply in order, so
 * `all:warn,ads:debug` leaves ads at debug (Istio stops at `all`; here a later item still counts).
 * Every bad item is reported, each naming the flag, the item and the reason.
 *
 * @param flag the flag name for messages, e.g. `--log_output_level`
 * @param text the flag's value; empty sets nothing
 */
export function parseScopedLevels(flag: string, text: string): Parsed<ScopedLevels> {
  const value: ScopedLevels = {};
  const errors: string[] = [];
  for (const item of text.split(",")) {
    if (item.trim() === "") continue;
    const colon = item.lastIndexOf(":");
    const scope = colon < 0 ? ALL_SCOPES : item.slice(0, colon).trim();
    const level = item.slice(colon + 1).trim();
    if (!isScope(scope)) {
      errors.push(`${flag}: "${item}": unknown scope "${scope}"; the scopes are ${SCOPE_LIST}`);
      continue;
    }
    if (!isLevel(level)) {
      errors.push(`${flag}: "${item}": unknown level "${level}"; the levels are ${LEVELS.join(", ")}`);
      continue;
    }
    for (const s of scope === ALL_SCOPES ? SCOPES : [scope]) value[s] = level;
  }
  return { value, errors };
}

/**
 * Parses `--log_caller`: comma-separated scope names (`all` for every scope) whose lines include the
 * calling file and line. Unknown names are errors (Istio ignores them silently).
 */
export function parseScopeList(flag: string, text: string): Parsed<Set<ScopeName>> {
  const value = new Set<ScopeName>();
  const errors: string[] = [];
  for (const item of text.split(",")) {
    const scope = item.trim();
    if (scope === "") continue;
    if (!isScope(scope)) {
      errors.push(`${flag}: unknown scope "${scope}"; the scopes are ${SCOPE_LIST}`);
      continue;
    }
    for (const s of scope === ALL_SCOPES ? SCOPES : [scope]) value.add(s);
  }
  return { value, errors };
}
