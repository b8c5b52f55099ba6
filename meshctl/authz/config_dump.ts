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
  mergeByAction,
  type MergedAuthorizationPolicies,
} from "../../shared/mod.ts";
import { DUMP_TYPES } from "../../shared/internal/config_dump/types.ts";
import type { ConfigDump } from "../proxy_admin.ts";
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
 * @throws Error naming the file when it cannot be read
 */
export async function readConfigDumpFile(file: string): Promise<ConfigDump | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (e) {
    if (e instanceof Deno.errors.IsADirectory) return undefined;
    throw new Error(`${file}: ${e instanceof Deno.errors.NotFound ? "no such file" : (e as Error).message}`);
  }
  if (!text.trimStart().startsWith("{")) return undefined;
  try {
    const value = JSON.parse(text) as { configs?: unknown };
    return Array.isArray(value?.configs) ? value as ConfigDump : undefined;
  } catch {
    return undefined;
  }
}

// deno-lint-ignore no-explicit-any
type Json = any;

function record(value: unknown, what: string): Record<string, Json> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(`${what}: not an object`);
  }
  return value as Record<string, Json>;
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
  const w = mesh.workload === null || mesh.workload === undefined
    ? undefined
    : record(mesh.workload, `${what}: mesh.workload`);
  if (w === undefined) {
    throw new Error(`${what}: mesh.workload: empty: the proxy had no config from meshd yet`);
  }
  const resources = record(
    record(mesh.authorizations ?? {}, `${what}: mesh.authorizations`).resources ?? {},
    `${what}: mesh.authorizations.resources`,
  );
  const policies = Object.entries(resources).map(([key, v]): ApplicableAuthorizationPolicy => {
    const p = record(v, `${what}: mesh.authorizations.resources["${key}"]`);
    if (typeof p.name !== "string" || typeof p.namespace !== "string") {
      throw new Error(`${what}: mesh.authorizations.resources["${key}"]: name and namespace must be strings`);
    }
    if (p.rules !== undefined && p.rules !== null && !Array.isArray(p.rules)) {
      throw new Error(`${what}: mesh.authorizations.resources["${key}"].rules: not a list`);
    }
    return {
      name: p.name,
      namespace: p.namespace,
      action: p.action ?? "ALLOW",
      scope: p.scope ?? "NAMESPACE",
      rules: p.rules ?? [],
    };
  });
  const jwt = record(
    record(mesh.jwt_policies ?? {}, `${what}: mesh.jwt_policies`).resources ?? {},
    `${what}: mesh.jwt_policies.resources`,
  );
  const jwtRules = Object.keys(jwt).sort().flatMap((key) => {
    const p = record(jwt[key], `${what}: mesh.jwt_policies.resources["${key}"]`);
    return ((p.providers ?? []) as Json[]).map((r): DumpJwtRule => ({
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
      labels: (w.labels ?? {}) as Record<string, string>,
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
