/**
 * `experimental authz check|explain -f <config dump>`: as istioctl's `authz check -f` reads an Envoy
 * config dump, meshctl reads a proxy's `/config_dump` (saved, e.g. `proxy-config all <proxy> -o json`)
 * and takes the policies that proxy enforces from its mesh section (proxy/admin/config_dump.ts,
 * `mesh.admin.v1.MeshConfigDump`: `workload`, `authorizations`, `jwt_policies`, as meshd pushed them),
 * not from policy YAML. The policies are merged and evaluated by shared's code, as the proxy does.
 *
 * @module
 */
import {
  type ApplicableAuthorizationPolicy,
  AUTHORIZATION_OPERATION_FIELDS,
  AUTHORIZATION_SOURCE_FIELDS,
  type AuthorizationRuleView,
  type AuthorizationScope,
  mergeByAction,
  type MergedAuthorizationPolicies,
} from "../../shared/mod.ts";
import { DUMP_TYPES } from "../../shared/internal/config_dump/types.ts";
import {
  type JsonObject,
  objectAt,
  oneOf,
  optionalListAt,
  optionalStringAt,
  optionalStringsAt,
  stringMapAt,
} from "../json_fields.ts";
import { type ConfigDump, configDumpOf, looksLikeConfigDump } from "../proxy_admin.ts";
import type { AuthzWorkload } from "./workload.ts";

/** One JWT rule a proxy enforces (a RequestAuthentication's provider as meshd pushed it). */
export interface DumpJwtRule {
  /** `<namespace>/<name>` of the RequestAuthentication. */
  policy: string;
  issuer: string;
  audiences: string[];
  jwksUri: string;
  /** Whether the proxy holds keys for it (inline `jwks` or meshd's last good fetch). */
  keys: boolean;
}

/** What a dump says the proxy enforces. */
export interface DumpPolicies {
  workload: AuthzWorkload;
  merged: MergedAuthorizationPolicies;
  jwtRules: DumpJwtRule[];
}

/**
 * Reads `file` as a config dump: JSON with a `configs` array.
 *
 * @returns the dump, or undefined when the file is not one (policy YAML, or JSON of resources)
 * @throws Error naming the file when it cannot be read, or the field path of a section that is not
 *   an object
 */
export async function readConfigDumpFile(file: string): Promise<ConfigDump | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    if (e instanceof Deno.errors.IsADirectory) return undefined;
    const why = e instanceof Deno.errors.NotFound
      ? "no such file"
      : e instanceof Error
      ? e.message
      : String(e);
    throw new Error(`${file}: ${why}`);
  }
  if (!text.trimStart().startsWith("{")) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return looksLikeConfigDump(value) ? configDumpOf(value, file) : undefined;
}

const SCOPES: readonly AuthorizationScope[] = ["GLOBAL", "NAMESPACE", "WORKLOAD_SELECTOR"];

/** The resources map of a mesh section field (`authorizations`, `jwt_policies`); absent is empty. */
function resourcesAt(value: unknown, what: string): JsonObject {
  return objectAt(objectAt(value ?? {}, what).resources ?? {}, `${what}.resources`);
}

/** A list of objects; null or absent is empty. */
function objectsAt(value: unknown, what: string): JsonObject[] {
  return (optionalListAt(value, what) ?? []).map((v, i) => objectAt(v, `${what}[${i}]`));
}

/**
 * Decodes the fields of `o` that are present, with `decode`: a field the dump leaves out stays
 * absent, and null stays null, so that `check -o json` prints the rules as the proxy dumped them.
 */
function present<K extends string, T>(
  o: JsonObject,
  fields: readonly K[],
  decode: (value: unknown, field: K) => T,
): Partial<Record<K, T | null>> {
  const out: Partial<Record<K, T | null>> = {};
  for (const f of fields) {
    if (!(f in o) || o[f] === undefined) continue;
    out[f] = o[f] === null ? null : decode(o[f], f);
  }
  return out;
}

/** A source or an operation: its value lists (mesh.v1 Source and Operation have only those). */
function valueLists<K extends string>(
  value: unknown,
  fields: readonly K[],
  what: string,
): Partial<Record<K, string[] | null>> {
  return present(objectAt(value, what), fields, (v, f) => optionalStringsAt(v, `${what}.${f}`) ?? []);
}

/** A rule's `from` (each with a `source`) or `to` (each with an `operation`). */
function clauses<L extends string, C extends string, K extends string>(
  r: JsonObject,
  list: L,
  clause: C,
  fields: readonly K[],
  what: string,
): Partial<Record<L, Partial<Record<C, Partial<Record<K, string[] | null>> | null>>[] | null>> {
  return present(
    r,
    [list],
    () =>
      objectsAt(r[list], `${what}.${list}`).map((o, i) =>
        present(o, [clause], (v) => valueLists(v, fields, `${what}.${list}[${i}].${clause}`))
      ),
  );
}

/** A pushed rule (mesh.v1 Rule, as the proxy dumps it), decoded into the evaluator's shape. */
function ruleAt(value: unknown, what: string): AuthorizationRuleView {
  const r = objectAt(value, what);
  return {
    ...clauses(r, "from", "source", AUTHORIZATION_SOURCE_FIELDS, what),
    ...clauses(r, "to", "operation", AUTHORIZATION_OPERATION_FIELDS, what),
    ...present(r, ["when"], () =>
      objectsAt(r.when, `${what}.when`).map((c, i) => {
        const at = `${what}.when[${i}]`;
        const key = optionalStringAt(c.key, `${at}.key`);
        if (key === undefined) throw new Error(`${at}.key: required field is missing`);
        return {
          key,
          ...present(c, ["values", "notValues"], (v, f) => optionalStringsAt(v, `${at}.${f}`) ?? []),
        };
      })),
  };
}

/**
 * The workload, merged AuthorizationPolicies and JWT rules of a proxy's config dump.
 *
 * @param what the file, for errors
 * @throws Error naming the file and the field path when the mesh section is missing or malformed
 */
export function policiesFromDump(dump: ConfigDump, what: string): DumpPolicies {
  const mesh = dump.configs.find((c) => c["@type"] === DUMP_TYPES.mesh);
  if (mesh === undefined) {
    throw new Error(
      `${what}: configs: no ${DUMP_TYPES.mesh} section, so no authorization policies (not a dump of the mesh's proxy)`,
    );
  }
  if (mesh.workload === null || mesh.workload === undefined) {
    throw new Error(`${what}: mesh.workload: empty: the proxy had no config from meshd yet`);
  }
  const w = objectAt(mesh.workload, `${what}: mesh.workload`);
  const resources = resourcesAt(mesh.authorizations, `${what}: mesh.authorizations`);
  const policies = Object.entries(resources).map(([key, v]): ApplicableAuthorizationPolicy => {
    const at = `${what}: mesh.authorizations.resources["${key}"]`;
    const p = objectAt(v, at);
    if (typeof p.name !== "string" || typeof p.namespace !== "string") {
      throw new Error(`${at}: name and namespace must be strings`);
    }
    return {
      name: p.name,
      namespace: p.namespace,
      action: optionalStringAt(p.action, `${at}.action`) ?? "ALLOW",
      scope: p.scope === undefined ? "NAMESPACE" : oneOf(SCOPES, p.scope, `${at}.scope`),
      rules: (optionalListAt(p.rules, `${at}.rules`) ?? []).map((r, i) => ruleAt(r, `${at}.rules[${i}]`)),
    };
  });
  const jwt = resourcesAt(mesh.jwt_policies, `${what}: mesh.jwt_policies`);
  const jwtRules = Object.keys(jwt).sort().flatMap((key) => {
    const at = `${what}: mesh.jwt_policies.resources["${key}"]`;
    const p = objectAt(jwt[key], at);
    return objectsAt(p.providers, `${at}.providers`).map((r): DumpJwtRule => ({
      policy: `${p.namespace}/${p.name}`,
      issuer: String(r.issuer ?? ""),
      audiences: Array.isArray(r.audiences) ? r.audiences.map(String) : [],
      jwksUri: String(r.jwksUri ?? ""),
      keys: typeof r.jwks === "string" && r.jwks !== "",
    }));
  });
  return {
    workload: {
      namespace: String(w.namespace),
      name: String(w.name),
      labels: stringMapAt(w.labels, `${what}: mesh.workload.labels`),
    },
    merged: mergeByAction(policies),
    jwtRules,
  };
}

/** The short lines of JWT rules, after `check`'s table. */
export function jwtRulesText(rules: DumpJwtRule[]): string {
  if (rules.length === 0) return "RequestAuthentication: none\n";
  return rules.map((r) =>
    `RequestAuthentication ${r.policy}: issuer ${r.issuer}` +
    (r.audiences.length > 0 ? `, audiences [${r.audiences.join(",")}]` : "") +
    (r.jwksUri ? `, jwksUri ${r.jwksUri}` : "") + (r.keys ? "" : " (no keys yet)") + "\n"
  ).join("");
}
