/**
 * The install resource (seed 002 "Resources": an `IstioOperator`-style custom resource) and how meshctl
 * builds it, as istioctl does (istio/istio operator/pkg/render): the `-f` files' `spec` overlaid left to
 * right, then each `--set path=value`, on top of the profile named by `spec.profile` (`default`,
 * `minimal`, `demo`, `empty`). Pure.
 *
 * Shape read (`apiVersion: install.mesh.io/v1alpha1` or Istio's `install.istio.io/v1alpha1`, `kind:
 * MeshOperator` or `IstioOperator`): `spec.profile`, `spec.revision`, `spec.hub` and `spec.tag` (images
 * `<hub>/meshd:<tag>` and `<hub>/proxy:<tag>`), `spec.components.<name>.enabled` for `base` (CRDs,
 * namespace), `meshd` (Istio's `pilot` is an alias: RBAC, config, Deployment, Service, PDB, webhooks) and
 * `ingressGateway`, `spec.components.<name>.replicas`, and `spec.meshConfig.<key>` (merged into the
 * ConfigMap `mesh` that meshd reads). `spec.values` is accepted with a warning: no chart values exist.
 *
 * @module
 */
import { parseAllDocuments } from "yaml";

/** The components meshctl installs. */
export const COMPONENTS = ["base", "meshd", "ingressGateway"] as const;
/** One of {@link COMPONENTS}. */
export type ComponentName = typeof COMPONENTS[number];

/** The profiles, as istioctl's `manifests/profiles`. */
export const PROFILES = ["default", "minimal", "demo", "empty"] as const;

/** One component's settings. */
export interface ComponentSpec {
  enabled: boolean;
  /** Deployment replicas; undefined keeps the manifest's. */
  replicas?: number;
}

/** The install resource's spec, profile applied. */
export interface InstallSpec {
  profile: string;
  /** Empty: the default revision. */
  revision: string;
  hub?: string;
  tag?: string;
  components: Record<ComponentName, ComponentSpec>;
  meshConfig: Record<string, unknown>;
}

/** What building the spec found wrong (stops install unless `--force`) or worth a warning. */
export interface SpecProblems {
  errors: string[];
  warnings: string[];
}

type Json = Record<string, unknown>;

const isMap = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

const PROFILE_SPECS: Record<string, Json> = {
  default: {
    components: { base: { enabled: true }, meshd: { enabled: true }, ingressGateway: { enabled: true } },
  },
  minimal: {
    components: { base: { enabled: true }, meshd: { enabled: true }, ingressGateway: { enabled: false } },
  },
  // Istio's demo: every component, small; one replica each fits a one-node lab.
  demo: {
    components: {
      base: { enabled: true },
      meshd: { enabled: true, replicas: 1 },
      ingressGateway: { enabled: true, replicas: 1 },
    },
  },
  empty: {
    components: { base: { enabled: false }, meshd: { enabled: false }, ingressGateway: { enabled: false } },
  },
};

/** Deep overlay: maps merge key by key, anything else (lists included) replaces. */
export function overlay(base: Json, top: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(top)) {
    out[k] = isMap(v) && isMap(out[k]) ? overlay(out[k] as Json, v) : v;
  }
  return out;
}

/**
 * Splits a `--set` path at unescaped dots (`a.b\.c` is `a`, `b.c`, as istioctl's `--set`).
 *
 * @throws Error naming the path when a segment is empty or indexes a list (`a[0]`, not supported)
 */
export function setPath(path: string): string[] {
  const segments = path.split(/(?<!\\)\./).map((s) => s.replaceAll("\\.", "."));
  for (const s of segments) {
    if (s === "") throw new Error(`--set ${path}: empty path segment`);
    if (/\[\d*\]$/.test(s)) throw new Error(`--set ${path}: list indexes are not supported`);
  }
  return segments[0] === "spec" ? segments.slice(1) : segments;
}

/** A `--set` value as istioctl reads it: bool, then number, else string. */
export function setValue(text: string): unknown {
  if (text === "true" || text === "false") return text === "true";
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  return text;
}

/**
 * Applies `--set path=value` pairs to `spec`.
 *
 * @throws Error naming the pair when it has no `=` or a bad path
 */
export function applySets(spec: Json, sets: readonly string[]): Json {
  let out = spec;
  for (const s of sets) {
    const eq = s.indexOf("=");
    if (eq <= 0) throw new Error(`--set ${s}: expected path=value`);
    const path = setPath(s.slice(0, eq));
    let value: unknown = setValue(s.slice(eq + 1));
    for (const seg of [...path].reverse()) value = { [seg]: value };
    out = overlay(out, value as Json);
  }
  return out;
}

/**
 * The `spec` of each install resource in `text` (one file of `-f`).
 *
 * @throws Error naming `file` and the document when it is not an install resource
 */
export function installResourceSpecs(text: string, file: string): Json[] {
  const specs: Json[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    const where = `${file}: document ${i + 1}`;
    if (doc.errors.length > 0) throw new Error(`${where}: ${doc.errors[0].message}`);
    const o = doc.toJS();
    if (o === null || o === undefined) return;
    if (!isMap(o)) throw new Error(`${where}: not a mapping`);
    if (!["MeshOperator", "IstioOperator"].includes(String(o.kind))) {
      throw new Error(`${where}: kind: expected MeshOperator (or IstioOperator), got ${String(o.kind)}`);
    }
    if (o.spec !== undefined && !isMap(o.spec)) throw new Error(`${where}: spec: must be a mapping`);
    specs.push(o.spec ?? {});
  });
  return specs;
}

const SPEC_KEYS = new Set([
  "profile",
  "revision",
  "hub",
  "tag",
  "components",
  "meshConfig",
  "values",
  "namespace",
]);

/**
 * Builds the spec: the user's overlay (files, then sets) on the profile it names.
 *
 * @param user the `-f` specs overlaid and the `--set`s applied
 * @returns the spec and the problems found (unknown fields, components, profiles, bad types)
 */
export function buildSpec(user: Json, revisionFlag: string): { spec: InstallSpec; problems: SpecProblems } {
  const problems: SpecProblems = { errors: [], warnings: [] };
  for (const k of Object.keys(user)) {
    if (!SPEC_KEYS.has(k)) problems.errors.push(`spec.${k}: unknown field`);
  }
  if (user.values !== undefined) {
    problems.warnings.push("spec.values: has no effect (meshctl has no chart values)");
  }
  if (user.namespace !== undefined) {
    problems.warnings.push("spec.namespace: has no effect (the manifests install into mesh-system)");
  }
  const profile = typeof user.profile === "string" ? user.profile : "default";
  if (!(PROFILES as readonly string[]).includes(profile)) {
    problems.errors.push(`spec.profile: unknown profile ${profile} (known: ${PROFILES.join(", ")})`);
  }
  const components = isMap(user.components) ? { ...user.components } : {};
  if ("pilot" in components) {
    components.meshd = overlay(isMap(components.meshd) ? components.meshd : {}, components.pilot as Json);
    delete components.pilot;
  }
  const merged = overlay(PROFILE_SPECS[profile] ?? PROFILE_SPECS.default, { components });
  const out = {} as Record<ComponentName, ComponentSpec>;
  for (const [name, c] of Object.entries(merged.components as Json)) {
    if (!(COMPONENTS as readonly string[]).includes(name)) {
      problems.errors.push(
        `spec.components.${name}: unknown component (known: ${COMPONENTS.join(", ")}, pilot)`,
      );
      continue;
    }
    const comp = isMap(c) ? c : {};
    if (typeof comp.enabled !== "boolean") {
      problems.errors.push(`spec.components.${name}.enabled: must be a boolean`);
    }
    const replicas = comp.replicas;
    if (replicas !== undefined && (!Number.isInteger(replicas) || (replicas as number) < 0)) {
      problems.errors.push(`spec.components.${name}.replicas: must be a whole number ≥ 0`);
    }
    out[name as ComponentName] = {
      enabled: comp.enabled === true,
      ...(typeof replicas === "number" ? { replicas } : {}),
    };
  }
  const revision = revisionFlag || (typeof user.revision === "string" ? user.revision : "");
  if (revision !== "" && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(revision)) {
    problems.errors.push(`spec.revision: ${revision} is not a DNS label`);
  }
  const str = (k: string): string | undefined => {
    if (user[k] === undefined) return undefined;
    if (typeof user[k] !== "string") problems.errors.push(`spec.${k}: must be a string`);
    return String(user[k]);
  };
  const meshConfig = user.meshConfig === undefined ? {} : user.meshConfig;
  if (!isMap(meshConfig)) problems.errors.push("spec.meshConfig: must be a mapping");
  return {
    spec: {
      profile,
      revision: revision === "default" ? "" : revision,
      hub: str("hub"),
      tag: str("tag"),
      components: out,
      meshConfig: isMap(meshConfig) ? meshConfig : {},
    },
    problems,
  };
}
