/**
 * The proxy's last good key set of every JWT provider, whoever fetched it: meshd (its keys arrive
 * inside mesh.v1.JwtProvider) or this proxy (`jwksFetcher: PROXY`, proxy/jwks/fetcher.ts). A key set
 * stays in force until a newer good one arrives for the same source, so a push without usable keys
 * (meshd restarted while the identity provider is down and has no fetch yet; a key set that does not
 * parse) never replaces keys the proxy already has: valid tokens keep passing. Envoy's remote_jwks
 * likewise keeps its cached set when a refetch fails.
 *
 * A source is the provider's `jwksUri`, or `issuer:<iss>` for a provider without one (OIDC
 * discovery, whose key set meshd fetches, and inline keys, which meshd cannot tell apart for the
 * proxy). A source no provider of the current config uses is forgotten.
 *
 * @module
 */
// The file, not the shared/mod.ts barrel (see ../filters/inbound_filter.ts).
import { keySetProblem } from "../../shared/policy/jwt/authenticate.ts";
import type { RuntimeSnapshot } from "../runtime/snapshot.ts";

/** A decoded mesh.v1.JwtProvider, as far as this module reads it. */
interface ProviderMessage {
  issuer?: string;
  jwks?: string;
  jwksUri?: string;
  jwksFetcher?: string;
}

/** The source key of a provider's key set: its `jwksUri`, or `issuer:<iss>` without one. */
export function keySetSourceOf(p: { issuer?: string; jwksUri?: string }): string {
  return p.jwksUri ? p.jwksUri : `issuer:${p.issuer ?? ""}`;
}

/** A provider whose config brought no usable key set, verified with an older one. */
export interface KeptKeySet {
  /** The source key ({@link keySetSourceOf}). */
  source: string;
  issuer: string;
  /** Why the offered set is not used: `Jwks is not available yet`, `Jwks is not valid JSON`, .... */
  reason: string;
}

/** Keeps the last good key set of every source across config pushes and fetches. */
export class KeptKeySets {
  #held = new Map<string, string>();

  /**
   * Takes a config and the proxy's own fetches. A usable set offered by the provider's fetcher
   * (meshd's inside the provider, or the proxy's last good fetch for `jwksFetcher: PROXY`) is the
   * newest and goes into force; an unusable or missing one leaves the held set in force.
   *
   * @param jwtPolicies the decoded mesh.v1.JwtPolicy resources as meshd sent them
   * @param fetched the proxy's last good fetch per `jwksUri` (ProxyJwksFetcher.keys())
   * @returns the set in force per source (what `RuntimeSnapshot.jwks` holds), and the providers
   *   whose config offered no usable set but that keep an older good one
   */
  update(
    jwtPolicies: RuntimeSnapshot["jwtPolicies"],
    fetched: ReadonlyMap<string, string>,
  ): { keys: Record<string, string>; kept: KeptKeySet[] } {
    const next = new Map<string, string>();
    const kept: KeptKeySet[] = [];
    const providers = Object.values(jwtPolicies).flatMap((p) => (p.providers ?? []) as ProviderMessage[]);
    for (const p of providers) {
      const source = keySetSourceOf(p);
      const offered = (p.jwksFetcher === "PROXY" ? fetched.get(p.jwksUri ?? "") : p.jwks) ?? "";
      const problem = keySetProblem(offered);
      if (problem === undefined) {
        next.set(source, offered);
        continue;
      }
      const held = next.get(source) ?? this.#held.get(source);
      if (held === undefined) continue;
      next.set(source, held);
      kept.push({ source, issuer: p.issuer ?? "", reason: problem });
    }
    this.#held = next;
    return { keys: Object.fromEntries(next), kept };
  }
}
