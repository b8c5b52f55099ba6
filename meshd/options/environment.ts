/**
 * meshd's environment variables (meshd seed, "Environment variables"): every variable of the seed's
 * table with its type and default, read and validated in one place, from an injectable map. The
 * rows live by component in ./env/ (security, registry, push, generation, injection, platform).
 *
 * Values follow Go's syntax, as Istio reads them (shared/internal/cli/go_values.ts): bool as
 * strconv.ParseBool (`true`, `false`, `1`, `0`, `t`, `F`, `TRUE`, `False`, ...), int as strconv.Atoi,
 * float as strconv.ParseFloat (decimal forms only), duration as time.ParseDuration (`100ms`,
 * `1h0m0s`). Durations come out in milliseconds (fractional below 1ms). Unlike Istio, which logs a
 * bad value and falls back to the default, a bad value here is an error, so that a typo cannot go
 * unnoticed.
 *
 * @module
 */
import { parseJwksFetchMode } from "../../shared/mod.ts";
import {
  parseDecimal,
  parseGoAtoi,
  parseGoBool,
  parseGoDuration,
  parseOneOf,
  showValue,
  type ValueResult,
} from "../../shared/internal/cli/go_values.ts";
import type { EnvVar } from "./env/env_var.ts";
import { GENERATION_ENV } from "./env/generation.ts";
import { INJECTION_ENV } from "./env/injection.ts";
import { PLATFORM_ENV } from "./env/platform.ts";
import { PUSH_ENV } from "./env/push.ts";
import { REGISTRY_ENV } from "./env/registry.ts";
import { SECURITY_ENV } from "./env/security.ts";

/** Every variable of the seed's table (177), by component. */
export const ENV_VARS = [
  ...SECURITY_ENV,
  ...REGISTRY_ENV,
  ...PUSH_ENV,
  ...GENERATION_ENV,
  ...INJECTION_ENV,
  ...PLATFORM_ENV,
] as const satisfies readonly EnvVar[];

/** The name of one of {@link ENV_VARS}. */
export type EnvVarName = typeof ENV_VARS[number]["name"];

interface EnvTypeMap {
  bool: boolean;
  string: string;
  int: number;
  float: number;
  duration: number;
}

type EnvValue<V extends EnvVar> = EnvTypeMap[V["type"]] | (V["default"] extends string ? never : undefined);

/**
 * The parsed environment: one member per variable, named as the variable. bool is boolean; int and
 * float are numbers; duration is milliseconds; a variable without a default that is not set is
 * undefined.
 */
export type MeshdEnvironment = { readonly [V in typeof ENV_VARS[number] as V["name"]]: EnvValue<V> };

/**
 * The variables something reads in this release: the rows without `noEffect`. POD_NAMESPACE counts
 * because it is the default of `--namespace`. tests/structure/settings_test.ts finds a reader of
 * each.
 */
export const ENV_VARS_IN_EFFECT: readonly EnvVarName[] = ENV_VARS
  .filter((v: EnvVar) => v.noEffect === undefined).map((v) => v.name);

/**
 * One warning per variable set (not empty) in `source` that has no effect yet, naming it and why:
 * `CLUSTER_ID is set but has no effect yet: ...`.
 */
export function inertVariableWarnings(source: Readonly<Record<string, string | undefined>>): string[] {
  return (ENV_VARS as readonly EnvVar[])
    .filter((v) => v.noEffect !== undefined && source[v.name] !== undefined && source[v.name] !== "")
    .map((v) => `environment variable ${v.name} is set but has no effect yet: ${v.noEffect}`);
}

/**
 * One warning per variable set (not empty) in `source` whose `needs` variable is false in `env`:
 * `DISCO_XDS_CACHE_SIZE is set but has no effect: DISCO_ENABLE_XDS_CACHE is false`.
 */
function unneededWarnings(
  source: Readonly<Record<string, string | undefined>>,
  env: Readonly<Record<string, EnvValueOf | undefined>>,
): string[] {
  return (ENV_VARS as readonly EnvVar[])
    .filter((v) => v.needs !== undefined && env[v.needs] === false && (source[v.name] ?? "") !== "")
    .map((v) => `environment variable ${v.name} is set but has no effect: ${v.needs} is false`);
}

type EnvValueOf = boolean | string | number;

function parseValue(spec: EnvVar, text: string): ValueResult<EnvValueOf> {
  let r: ValueResult<number>;
  switch (spec.type) {
    case "string":
      return spec.values ? parseOneOf(text, spec.values) : { ok: true, value: text };
    case "bool":
      return parseGoBool(text);
    case "int":
      r = parseGoAtoi(text);
      break;
    case "float":
      r = parseDecimal(text);
      break;
    case "duration":
      r = parseGoDuration(text);
      break;
  }
  if (!r.ok) return r;
  const unit = spec.type === "duration" ? "ms" : "";
  if (spec.max !== undefined && (r.value < (spec.min ?? -Infinity) || r.value > spec.max)) {
    return { ok: false, reason: `is out of range ${spec.min}${unit}..${spec.max}${unit}` };
  }
  if (spec.min !== undefined && r.value < spec.min) {
    return { ok: false, reason: `is below the minimum ${spec.min}${unit}` };
  }
  return r;
}

/** What {@link readEnvironment} returns. */
export interface EnvironmentResult {
  /**
   * Every variable's value. A variable with a bad value holds its default, so that callers can go on
   * to find the errors of other inputs; do not start anything while `errors` is not empty.
   */
  env: MeshdEnvironment;
  /** One message per bad variable, each naming the variable, the value and the reason. */
  errors: string[];
  /** One message per variable set that has no effect yet ({@link inertVariableWarnings}). */
  warnings: string[];
}

/**
 * Reads and validates every variable of {@link ENV_VARS}. Every bad value is reported, not only the
 * first. An empty value of a bool, int, float or duration variable counts as unset (Go's parsers
 * reject it and Istio then uses the default; manifests often carry `value: ""`), and so does an
 * empty value of a string variable with a fixed set of values; another empty string variable is the
 * empty string. A string variable with a fixed set of values refuses any other value, naming them.
 *
 * @param source the variables; Deno.env.toObject() by default (needs --allow-env)
 */
export function readEnvironment(
  source: Readonly<Record<string, string | undefined>> = Deno.env.toObject(),
): EnvironmentResult {
  const env: Record<string, EnvValueOf | undefined> = {};
  const errors: string[] = [];
  for (const spec of ENV_VARS as readonly EnvVar[]) {
    const text = source[spec.name];
    const fallback = spec.default === undefined ? undefined : parseValue(spec, spec.default);
    const defaultValue = fallback?.ok ? fallback.value : undefined;
    if (text === undefined || (text === "" && (spec.type !== "string" || spec.values))) {
      env[spec.name] = defaultValue;
      continue;
    }
    const r = parseValue(spec, text);
    if (r.ok) env[spec.name] = r.value;
    else {
      errors.push(`environment variable ${spec.name}: ${showValue(text)} ${r.reason}`);
      env[spec.name] = defaultValue;
    }
  }
  const result = env as MeshdEnvironment;
  // Each bound may be fine alone, but with the default above the maximum no default request could
  // ever be signed.
  if (result.DEFAULT_WORKLOAD_CERT_TTL > result.MAX_WORKLOAD_CERT_TTL) {
    const shown = (name: EnvVarName) => source[name] || ENV_VARS.find((v) => v.name === name)?.default;
    errors.push(
      "environment variables DEFAULT_WORKLOAD_CERT_TTL and MAX_WORKLOAD_CERT_TTL: the default " +
        `${shown("DEFAULT_WORKLOAD_CERT_TTL")} is above the maximum ${shown("MAX_WORKLOAD_CERT_TTL")}`,
    );
  }
  try {
    parseJwksFetchMode(result.DISCO_JWT_ENABLE_REMOTE_JWKS);
  } catch (e) {
    errors.push(`environment variable DISCO_JWT_ENABLE_REMOTE_JWKS: ${(e as Error).message}`);
    (env as Record<string, EnvValueOf | undefined>).DISCO_JWT_ENABLE_REMOTE_JWKS = "false";
  }
  return {
    env: result,
    errors,
    warnings: [...inertVariableWarnings(source), ...unneededWarnings(source, env)],
  };
}
