/**
 * The inbound policies of one runtime snapshot, compiled once (not per request): the JWT providers
 * of every RequestAuthentication (with the last good keys the proxy holds, proxy/jwks/kept_keys.ts) and
 * the AuthorizationPolicies that meshd sent for this workload,
 * as the shared evaluator's compiled forms. Cached by snapshot object, so each config push (and
 * each worker's copy of it) is compiled once.
 *
 * @module
 */
import type { AuthorizationPolicyView, CompiledAuthorization, JwtProvider } from "../../shared/mod.ts";
// Files, not the shared/mod.ts barrel (see inbound_filter.ts).
import { compileAuthorization } from "../../shared/policy/authorization/evaluate.ts";
import { JwtAuthenticator, keySetProblem } from "../../shared/policy/jwt/authenticate.ts";
import { keySetSourceOf } from "../jwks/kept_keys.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";

/** The request header that asks the proxy to say in a 403 which policy denied it. */
export const AUTHZ_DEBUG_HEADER = "x-mesh-authz-debug";

/** What the inbound filter applies for one snapshot. */
export interface InboundPolicies {
  /** RequestAuthentication providers; null when none applies. */
  authn: JwtAuthenticator | null;
  /** AuthorizationPolicies; null when none applies (every request allowed). */
  authz: CompiledAuthorization | null;
  /**
   * Why the policies could not be compiled (action CUSTOM, a bad value that validation missed);
   * every request is then denied (fail closed) until a good config arrives.
   */
  error: string | null;
  /** Lower-case names of the request headers the filter reads (host always). */
  headerNames: ReadonlySet<string>;
  /** Whether there is anything to apply. */
  active: boolean;
}

const cache = new WeakMap<RuntimeSnapshot, InboundPolicies>();

function sortedValues(record: Record<string, Record<string, unknown>>): Record<string, unknown>[] {
  return Object.keys(record).sort().map((k) => record[k]);
}

/**
 * The providers of every JwtPolicy with their keys: those that the proxy fetches itself
 * (`jwksFetcher: PROXY`) with the last good set it holds (empty before the first: their tokens get
 * 401); those meshd fetched with the set meshd sent when it is usable, else with the last good one
 * the proxy holds (meshd restarted and has no fetch yet), else as sent (401).
 */
function providersOf(snapshot: RuntimeSnapshot): JwtProvider[] {
  const held = snapshot.jwks ?? {};
  return sortedValues(snapshot.jwtPolicies).flatMap((p) =>
    ((p.providers ?? []) as JwtProvider[]).map((provider) => {
      const kept = held[keySetSourceOf(provider)];
      if (provider.jwksFetcher === "PROXY") return { ...provider, jwks: kept ?? "" };
      if (kept === undefined || keySetProblem(provider.jwks) === undefined) return provider;
      return { ...provider, jwks: kept };
    })
  );
}

function compile(snapshot: RuntimeSnapshot): InboundPolicies {
  const providers = providersOf(snapshot);
  const views = sortedValues(snapshot.authorizations) as unknown as AuthorizationPolicyView[];
  let authn: JwtAuthenticator | null = null;
  let authz: CompiledAuthorization | null = null;
  let error: string | null = null;
  try {
    authn = providers.length > 0 ? new JwtAuthenticator(providers) : null;
    authz = views.length > 0 ? compileAuthorization(views) : null;
  } catch (e) {
    error = (e as Error).message;
  }
  const headerNames = new Set<string>(["host", AUTHZ_DEBUG_HEADER]);
  for (const n of authn?.headerNames ?? []) headerNames.add(n);
  for (const n of authn?.outputHeaders ?? []) headerNames.add(n);
  for (const n of authz?.headerNames ?? []) headerNames.add(n);
  return { authn, authz, error, headerNames, active: authn !== null || authz !== null || error !== null };
}

/** The compiled policies of a snapshot (compiled on first use, then cached). */
export function inboundPoliciesOf(snapshot: RuntimeSnapshot): InboundPolicies {
  let p = cache.get(snapshot);
  if (p === undefined) {
    p = compile(snapshot);
    cache.set(snapshot, p);
  }
  return p;
}
