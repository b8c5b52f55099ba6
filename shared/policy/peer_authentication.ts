/**
 * The effective mutual TLS mode of one workload port under a set of PeerAuthentication policies.
 * Implements the policies seed ("Scope and precedence rules" 1 to 4, and the PeerAuthentication rows
 * of "Observable effects") with Istio's semantics from `ComposePeerAuthentication`
 * (pilot/pkg/security/authn/policy_applier.go), `getConfigsForWorkload`
 * (pilot/pkg/model/authentication.go) and `configCompareByCreationTime` (pilot/pkg/model/config.go).
 *
 * @module
 */
import { DEFAULT_ROOT_NAMESPACE } from "../api/finding.ts";

/**
 * A mode as written in a policy, the schema's MTLS_MODES (shared/api/schemas/peer_authentication.ts;
 * the tests keep the two equal).
 */
export type MtlsMode = "UNSET" | "DISABLE" | "PERMISSIVE" | "STRICT";

/** A mode in effect on a port; UNSET never survives resolution. */
export type EffectiveMtlsMode = Exclude<MtlsMode, "UNSET">;

/**
 * The namespace a policy without `metadata.namespace` belongs to, as the ObjectMeta schema
 * documents (`kubectl apply` without `-n` in the default context).
 */
export const DEFAULT_POLICY_NAMESPACE: string = "default";

/**
 * The least a PeerAuthentication must carry to be evaluated: any object of the PeerAuthentication
 * schema's shape (shared/api/schemas/peer_authentication.ts) is one.
 */
export interface PeerAuthenticationPolicy {
  /** Identity and age of the policy. */
  metadata: {
    /** Policy name. */
    name: string;
    /** Policy namespace; default {@linkcode DEFAULT_POLICY_NAMESPACE}. */
    namespace?: string;
    /** RFC 3339 creation time; orders policies of one scope, oldest first. Missing sorts first. */
    creationTimestamp?: string;
  };
  /** The policy; missing means UNSET at every level. */
  spec?: {
    /** Workloads of the policy's namespace that it selects; no labels means namespace- or mesh-wide. */
    selector?: { matchLabels?: Record<string, string> };
    /** Workload-level mode; missing means UNSET. */
    mtls?: { mode?: MtlsMode };
    /** Per container port (decimal string) mode; used only when the port is bound to a service. */
    portLevelMtls?: Record<string, { mode?: MtlsMode }>;
  };
}

/** Where a policy applies, from widest to narrowest; `default` means no policy decided. */
export type PeerAuthenticationScope = "default" | "mesh" | "namespace" | "workload" | "port";

/** Names one policy. */
export interface PolicyRef {
  /** The policy's namespace (after defaulting). */
  namespace: string;
  /** The policy's name. */
  name: string;
}

/**
 * What decided a mode: the built-in default (`PERMISSIVE`), or a policy at some scope. For scope
 * `port` the policy is the workload policy whose `portLevelMtls` entry set the mode.
 */
export type PeerAuthenticationDecision =
  | { scope: "default" }
  | { scope: Exclude<PeerAuthenticationScope, "default">; policy: PolicyRef };

/** Input of {@linkcode effectivePeerAuthentication}. */
export interface EffectivePeerAuthenticationOptions {
  /** The workload's namespace. */
  namespace: string;
  /** The workload's labels; default none. */
  labels?: Record<string, string>;
  /** The container port, 1 to 65535. */
  port: number;
  /** Whether a service targets this port; `portLevelMtls` is ignored otherwise, as in Istio. */
  portBoundToService: boolean;
  /** Every PeerAuthentication known; those that do not apply to the workload are skipped. */
  policies: readonly PeerAuthenticationPolicy[];
  /** The mesh root namespace; default `mesh-system`. */
  rootNamespace?: string;
}

/** Result of {@linkcode effectivePeerAuthentication}. */
export interface EffectivePeerAuthentication {
  /** The mode in effect on the port. */
  mode: EffectiveMtlsMode;
  /** The policy (and scope) whose explicit mode is in effect, or the default. */
  decidedBy: PeerAuthenticationDecision;
  /**
   * The one policy chosen at each scope, present even when its mode was UNSET and so inherited,
   * so that a debugging tool can show why a newer or wider policy had no effect.
   */
  selected: {
    /** Oldest selector-less policy of the root namespace. */
    mesh?: PolicyRef;
    /** Oldest selector-less policy of the workload's namespace. */
    namespace?: PolicyRef;
    /** Oldest policy of the workload's namespace whose selector matches the workload. */
    workload?: PolicyRef;
  };
}

const EFFECTIVE_MODES: ReadonlySet<string> = new Set(["DISABLE", "PERMISSIVE", "STRICT"]);
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function namespaceOf(p: PeerAuthenticationPolicy): string {
  return p.metadata.namespace ?? DEFAULT_POLICY_NAMESPACE;
}

function refOf(p: PeerAuthenticationPolicy): PolicyRef {
  return { namespace: namespaceOf(p), name: p.metadata.name };
}

function selects(matchLabels: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(matchLabels).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);
}

/**
 * Milliseconds since the epoch. A missing timestamp is the oldest possible, because Istio compares
 * Go's zero `time.Time` (year 1), which precedes every real timestamp.
 */
function creationTime(p: PeerAuthenticationPolicy): number {
  const ts = p.metadata.creationTimestamp;
  if (ts === undefined) return -Infinity;
  const ms = RFC3339.test(ts) ? Date.parse(ts) : NaN;
  if (Number.isNaN(ms)) {
    throw new RangeError(
      `PeerAuthentication ${
        namespaceOf(p)
      }/${p.metadata.name}: creationTimestamp "${ts}" is not an RFC 3339 time`,
    );
  }
  return ms;
}

/** Istio's configCompareByCreationTime: oldest first, then name, then namespace. */
function olderFirst(a: PeerAuthenticationPolicy, b: PeerAuthenticationPolicy): number {
  const ta = creationTime(a);
  const tb = creationTime(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a.metadata.name !== b.metadata.name) return a.metadata.name < b.metadata.name ? -1 : 1;
  const na = namespaceOf(a);
  const nb = namespaceOf(b);
  return na === nb ? 0 : na < nb ? -1 : 1;
}

function oldest(candidates: PeerAuthenticationPolicy[]): PeerAuthenticationPolicy | undefined {
  // Parsing every timestamp, not just those compared, makes a bad one fail whether or not it has rivals.
  candidates.forEach(creationTime);
  let best: PeerAuthenticationPolicy | undefined;
  for (const c of candidates) {
    if (best === undefined || olderFirst(c, best) < 0) best = c;
  }
  return best;
}

/** The explicit mode, or undefined for UNSET (and for a missing `mtls` or `mode`). */
function explicitMode(
  mode: MtlsMode | undefined,
  p: PeerAuthenticationPolicy,
  where: string,
): EffectiveMtlsMode | undefined {
  if (mode === undefined || mode === "UNSET") return undefined;
  if (EFFECTIVE_MODES.has(mode)) return mode as EffectiveMtlsMode;
  throw new RangeError(
    `PeerAuthentication ${namespaceOf(p)}/${p.metadata.name}: ${where} "${String(mode)}" is not ` +
      "UNSET, DISABLE, PERMISSIVE or STRICT",
  );
}

function portLevelEntry(
  portLevel: Record<string, { mode?: MtlsMode }>,
  port: number,
): { mode?: MtlsMode } | undefined {
  const exact = String(port);
  if (Object.hasOwn(portLevel, exact)) return portLevel[exact];
  // Istio's map<uint32, ...> parses keys as numbers, so "08080" names port 8080 too.
  for (const [key, value] of Object.entries(portLevel)) {
    if (/^[0-9]+$/.test(key) && Number(key) === port) return value;
  }
  return undefined;
}

/**
 * Resolves the mutual TLS mode of one workload port, as Istio's ComposePeerAuthentication:
 *
 * 1. Policies apply only from the root namespace and the workload's namespace. Without selector
 *    labels (no selector, or empty `matchLabels`) a root-namespace policy is mesh-wide and any other
 *    namespace-wide; with labels a policy is workload-level when its `matchLabels` are a subset of
 *    the workload's labels, except in the root namespace, where it is ignored.
 * 2. Each scope keeps only its oldest policy (creationTimestamp; a missing one counts as oldest, as
 *    Go's zero time does in Istio; ties by name, then namespace).
 * 3. Starting from PERMISSIVE, the mesh, namespace and workload policies in turn replace the mode,
 *    unless theirs is UNSET (or `mtls` or `mode` is missing), which inherits the wider result.
 * 4. If the port is bound to a service, the workload policy's `portLevelMtls` entry for the port
 *    replaces the mode unless it is UNSET. Unbound ports ignore `portLevelMtls`.
 *
 * @param options the workload (namespace, labels), the port, whether a service targets it, all
 *   policies, and the root namespace (default `mesh-system`)
 * @returns the mode, the decision that set it, and the policy chosen at each scope
 * @throws {RangeError} if `port` is not an integer in 1..65535, if a policy that applies to the
 *   workload has a creationTimestamp that is not RFC 3339 (schema validation does not check it), or
 *   if a mode that is consulted is outside MTLS_MODES (schema validation rejects those)
 */
export function effectivePeerAuthentication(
  options: EffectivePeerAuthenticationOptions,
): EffectivePeerAuthentication {
  const { namespace, port, portBoundToService, policies } = options;
  const labels = options.labels ?? {};
  const rootNamespace = options.rootNamespace ?? DEFAULT_ROOT_NAMESPACE;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RangeError(`port must be an integer in 1..65535, got ${port}`);
  }

  const mesh: PeerAuthenticationPolicy[] = [];
  const ns: PeerAuthenticationPolicy[] = [];
  const workload: PeerAuthenticationPolicy[] = [];
  for (const p of policies) {
    const pns = namespaceOf(p);
    if (pns !== namespace && pns !== rootNamespace) continue;
    const matchLabels = p.spec?.selector?.matchLabels ?? {};
    if (Object.keys(matchLabels).length === 0) {
      (pns === rootNamespace ? mesh : ns).push(p);
    } else if (pns !== rootNamespace && selects(matchLabels, labels)) {
      workload.push(p);
    }
  }

  const chosen = { mesh: oldest(mesh), namespace: oldest(ns), workload: oldest(workload) };
  let mode: EffectiveMtlsMode = "PERMISSIVE";
  let decidedBy: PeerAuthenticationDecision = { scope: "default" };
  for (const scope of ["mesh", "namespace", "workload"] as const) {
    const p = chosen[scope];
    if (p === undefined) continue;
    const m = explicitMode(p.spec?.mtls?.mode, p, "mtls.mode");
    if (m !== undefined) {
      mode = m;
      decidedBy = { scope, policy: refOf(p) };
    }
  }

  const wp = chosen.workload;
  const portLevel = wp?.spec?.portLevelMtls;
  if (wp !== undefined && portLevel && portBoundToService) {
    const entry = portLevelEntry(portLevel, port);
    const m = explicitMode(entry?.mode, wp, `portLevelMtls[${port}].mode`);
    if (m !== undefined) {
      mode = m;
      decidedBy = { scope: "port", policy: refOf(wp) };
    }
  }

  const selected: EffectivePeerAuthentication["selected"] = {};
  if (chosen.mesh) selected.mesh = refOf(chosen.mesh);
  if (chosen.namespace) selected.namespace = refOf(chosen.namespace);
  if (chosen.workload) selected.workload = refOf(chosen.workload);
  return { mode, decidedBy, selected };
}
