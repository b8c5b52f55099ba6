/**
 * PeerAuthentication resolution cases shared by the peer_authentication tests: policy builders, a
 * compact explanation of a result, and the table runner. Test-only: excluded from the JSR package.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type EffectivePeerAuthentication,
  effectivePeerAuthentication,
  type EffectivePeerAuthenticationOptions,
  type MtlsMode,
  type PeerAuthenticationPolicy,
} from "./mod.ts";

/** The root namespace of the cases. */
export const ROOT = "mesh-system";

/** The fields of a policy built by {@link pa}. */
export interface PolicyOptions {
  mode?: MtlsMode;
  labels?: Record<string, string>;
  ports?: Record<string, MtlsMode | undefined>;
  ts?: string;
}

/** A policy `name` in `namespace`; omitted fields stay omitted, so missing-field cases are real. */
export function pa(namespace: string, name: string, o: PolicyOptions = {}): PeerAuthenticationPolicy {
  const spec: NonNullable<PeerAuthenticationPolicy["spec"]> = {};
  if (o.labels) spec.selector = { matchLabels: o.labels };
  if (o.mode) spec.mtls = { mode: o.mode };
  if (o.ports) {
    spec.portLevelMtls = Object.fromEntries(
      Object.entries(o.ports).map(([port, mode]) => [port, mode === undefined ? {} : { mode }]),
    );
  }
  return {
    metadata: { name, namespace, ...(o.ts ? { creationTimestamp: o.ts } : {}) },
    spec,
  };
}

/** The labels of the workload the cases resolve for, unless they say otherwise. */
export const HTTPBIN = { app: "httpbin", version: "v1" };
/** Labels of another workload. */
export const SLEEP = { app: "sleep" };

/** "<mode> by <scope>[ <namespace>/<name>]": compact enough for one table row per case. */
export function explain(r: EffectivePeerAuthentication): string {
  const d = r.decidedBy;
  return d.scope === "default"
    ? `${r.mode} by default`
    : `${r.mode} by ${d.scope} ${d.policy.namespace}/${d.policy.name}`;
}

/** One resolution: the policies, the workload and port, and the explained result. */
export interface PeerAuthenticationCase {
  name: string;
  policies: PeerAuthenticationPolicy[];
  /** Workload namespace; default "foo". */
  namespace?: string;
  /** Workload labels; default HTTPBIN. */
  labels?: Record<string, string>;
  /** Port; default 8000 (the seed's echo service port). */
  port?: number;
  /** Default true. */
  bound?: boolean;
  rootNamespace?: string;
  want: string;
}

/** One `Deno.test` per case; each also runs with the policies reversed (Istio sorts before composing). */
export function testPeerAuthenticationCases(cases: readonly PeerAuthenticationCase[]): void {
  for (const c of cases) {
    Deno.test(`effectivePeerAuthentication: ${c.name}`, () => {
      const options: EffectivePeerAuthenticationOptions = {
        namespace: c.namespace ?? "foo",
        labels: c.labels ?? HTTPBIN,
        port: c.port ?? 8000,
        portBoundToService: c.bound ?? true,
        policies: c.policies,
        ...(c.rootNamespace ? { rootNamespace: c.rootNamespace } : {}),
      };
      assert.equal(explain(effectivePeerAuthentication(options)), c.want);
      // Input order must not matter: Istio sorts before composing.
      const reversed = effectivePeerAuthentication({ ...options, policies: [...c.policies].reverse() });
      assert.equal(explain(reversed), c.want);
    });
  }
}
