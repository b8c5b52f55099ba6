/**
 * The push context after a config change that touched only policy kinds, derived from the last one
 * instead of built whole: an AuthorizationPolicy change rebuilds the authorization policies and their
 * TCP warnings, a RequestAuthentication change the JWT policies, a PeerAuthentication change the
 * inbound mutual TLS of each workload (only the workloads whose modes differ become new views) and the
 * endpoints' `mtlsDisabledPorts` (auto_mtls.ts: only the services with an endpoint whose list differs
 * become new views). The gateway routes, credentials and every other workload and service keep the last
 * context's (frozen) objects, so that the generators find them unchanged by identity; a PeerAuthentication
 * changes nothing else of a service (an endpoint's proxied flag and identity come from connected proxies
 * and labels). As istiod's `updateContext` (pilot/pkg/model/push_context.go),
 * which re-initialises only the indexes of the kinds a push names and copies the rest from the old
 * context.
 *
 * The result equals what buildPushContext gives for the same config (policy_change_test.ts checks
 * it on random sequences of policy edits mixed with connects), and is frozen as it is.
 *
 * @module
 */
import { tcpAuthorizationWarnings } from "./authz_warnings.ts";
import { deepFreeze, FrozenMap } from "./frozen.ts";
import { inlineMtls, withWorkloadMtls } from "./auto_mtls.ts";
import { portMtls, selectingViews } from "./push_context.ts";
import type {
  ConfigResource,
  EndpointView,
  OfKind,
  PortMtlsView,
  PushContext,
  ServiceView,
  WorkloadView,
} from "./views.ts";

/** The kinds whose change alone derives the next push context (`withPolicies`). */
export const POLICY_KINDS: ReadonlySet<string> = new Set([
  "AuthorizationPolicy",
  "PeerAuthentication",
  "RequestAuthentication",
]);

/** A derived push context and what changed in it. */
export interface PolicyChange {
  readonly context: PushContext;
  /** Keys of the workloads whose inbound mutual TLS changed: their own Workload resource did. */
  readonly workloads: ReadonlySet<string>;
  /** Whether a service changed (an endpoint's `mtlsDisabledPorts`): every proxy's Service list did. */
  readonly servicesChanged: boolean;
}

/**
 * The push context `prev` with the policies of `resources`; `prev` itself is unchanged.
 *
 * @param prev the last push context (built whole or derived), of the same config but for the kinds
 *   in `kinds`
 * @param resources the config's resources now (only the policy kinds are read)
 * @param kinds the kinds changed since `prev`: each one of {@link POLICY_KINDS}
 * @param version the derived context's version label
 * @throws when `kinds` names a kind outside {@link POLICY_KINDS}
 */
export function withPolicies(
  prev: PushContext,
  resources: readonly ConfigResource[],
  kinds: ReadonlySet<string>,
  version: string,
): PolicyChange {
  for (const k of kinds) if (!POLICY_KINDS.has(k)) throw new Error(`withPolicies: ${k} is not a policy kind`);
  const byKind = <K extends ConfigResource["kind"]>(kind: K): OfKind<K>[] =>
    resources.filter((r): r is OfKind<K> => r.kind === kind);
  const next: { -readonly [K in keyof PushContext]: PushContext[K] } = {
    ...prev,
    version,
    builtAt: Date.now(),
  };
  if (kinds.has("AuthorizationPolicy")) {
    next.authorizationPolicies = selectingViews(byKind("AuthorizationPolicy"));
    next.authorizationWarnings = tcpAuthorizationWarnings({
      services: prev.services,
      workloads: prev.workloads,
      policies: next.authorizationPolicies,
      rootNamespace: prev.rootNamespace,
    });
  }
  if (kinds.has("RequestAuthentication")) {
    next.requestAuthentications = selectingViews(byKind("RequestAuthentication"));
  }
  const changed = new Set<string>();
  let servicesChanged = false;
  if (kinds.has("PeerAuthentication")) {
    const policies = byKind("PeerAuthentication").map((r) => r.resource);
    const workloads = new Map(prev.workloads);
    for (const w of prev.workloads.values()) {
      const view = withMtls(w, policies, prev.rootNamespace);
      if (view === w) continue;
      workloads.set(w.key, view);
      changed.add(w.key);
    }
    if (changed.size > 0) next.workloads = new FrozenMap(workloads);
    // The config's ServiceEntries come first, a registry's services after them (push_context.ts); the
    // number of ServiceEntries is the last build's, as no ServiceEntry changed.
    const inline = inlineMtls(policies, prev.rootNamespace);
    const configServices = byKind("ServiceEntry").length;
    const services = prev.services.map((svc, i) =>
      withEndpointMtls(svc, (e) => {
        if (e.workload !== "") {
          return changed.has(e.workload) ? withWorkloadMtls(workloads.get(e.workload), e) : e;
        }
        // A registry endpoint without a workload has none; a ServiceEntry's inline one reads its labels.
        return i < configServices ? inline(svc.namespace, e) : e;
      })
    );
    servicesChanged = services.some((svc, i) => svc !== prev.services[i]);
    if (servicesChanged) next.services = services;
  }
  return { context: deepFreeze(next), workloads: changed, servicesChanged };
}

/** `svc` with each endpoint as `update` makes it: `svc` itself when no `mtlsDisabledPorts` differs. */
function withEndpointMtls(svc: ServiceView, update: (e: EndpointView) => EndpointView): ServiceView {
  let endpoints: EndpointView[] | undefined;
  svc.endpoints.forEach((e, i) => {
    const u = update(e);
    if (u === e || samePorts(u.mtlsDisabledPorts, e.mtlsDisabledPorts)) return;
    endpoints ??= [...svc.endpoints];
    endpoints[i] = u;
  });
  return endpoints ? { ...svc, endpoints } : svc;
}

function samePorts(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((p, i) => p === b[i]);
}

/** `w` with its ports' modes under `policies`: `w` itself when none differs. */
function withMtls(
  w: WorkloadView,
  policies: readonly OfKind<"PeerAuthentication">["resource"][],
  rootNamespace: string,
): WorkloadView {
  // The bound ports are those of the last view: only services decide them, and no service changed.
  const inboundMtls = w.inboundMtls.map((m) => portMtls(w, m.port, true, policies, rootNamespace));
  const defaultMtls = portMtls(w, 1, false, policies, rootNamespace);
  if (sameMtls(defaultMtls, w.defaultMtls) && inboundMtls.every((m, i) => sameMtls(m, w.inboundMtls[i]))) {
    return w;
  }
  return { ...w, inboundMtls, defaultMtls };
}

function sameMtls(a: PortMtlsView, b: PortMtlsView): boolean {
  return a.port === b.port && a.mode === b.mode && a.policy === b.policy && a.scope === b.scope;
}
