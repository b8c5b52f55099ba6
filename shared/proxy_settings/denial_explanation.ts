/**
 * Who may read why a request was denied. A 403 carries `x-mesh-authz-reason` (the deciding policy
 * and rule) only when the request asked for it with `x-mesh-authz-debug: 1` AND its source is listed
 * in the mesh config's `denialExplanation`; by default nobody is, since a policy name tells an
 * attacker which rule to work around. The proxy's log names the deciding policy and rule always.
 *
 * Mesh config (meshd `--meshConfig`; this mesh's own field, Istio has none):
 *
 * ```yaml
 * denialExplanation:
 *   principals: ["cluster.local/ns/mesh-system/*"]   # peer identities over mutual TLS, as AuthorizationPolicy's `principals`
 *   ipBlocks: ["127.0.0.1/32"]                       # connection peer addresses (never X-Forwarded-For)
 * ```
 *
 * @module
 */
import { type CidrBlock, cidrContains, parseCidr, parseIp } from "../policy/authorization/ip_block.ts";
import { type TextMatcher, wildcardMatcher } from "../policy/authorization/string_match.ts";

/** The sources that may read a denial's explanation. */
export interface DenialExplanation {
  /**
   * Peer principals (`<trust domain>/ns/<namespace>/sa/<account>`, without `spiffe://`), with
   * AuthorizationPolicy's wildcards: `*` (any), `prefix*`, `*suffix`.
   */
  principals: string[];
  /** Peer addresses or CIDR blocks (`127.0.0.1`, `10.0.0.0/8`, `::1/128`). */
  ipBlocks: string[];
}

/** Nobody: the default. */
export const NO_DENIAL_EXPLANATION: Readonly<DenialExplanation> = Object.freeze({
  principals: [],
  ipBlocks: [],
});

/**
 * Checks a `denialExplanation` value (from YAML or decoded from a resource).
 *
 * @param value the map; absent, null and absent lists are empty
 * @param at its field path in messages, e.g. `settings.denialExplanation`
 * @throws Error `<at>.<field>[<i>]: <value> is not ...`
 */
export function denialExplanationOf(value: unknown, at: string): DenialExplanation {
  if (value === undefined || value === null) return { principals: [], ipBlocks: [] };
  if (typeof value !== "object" || Array.isArray(value)) throw new Error(`${at}: expected a map`);
  const v = value as Record<string, unknown>;
  const list = (field: string, ok: (s: string) => boolean, what: string): string[] => {
    const l = v[field];
    if (l === undefined || l === null) return [];
    if (!Array.isArray(l)) throw new Error(`${at}.${field}: expected a list`);
    return l.map((s, i) => {
      if (typeof s !== "string" || !ok(s)) {
        throw new Error(`${at}.${field}[${i}]: ${JSON.stringify(s)} is not ${what}`);
      }
      return s;
    });
  };
  return {
    principals: list(
      "principals",
      (s) => s !== "" && !s.startsWith("spiffe://"),
      "a principal (without spiffe://)",
    ),
    ipBlocks: list("ipBlocks", (s) => parseCidr(s) !== undefined, "an IP address or CIDR block"),
  };
}

/** The source of a denied request, as the connection shows it. */
export interface ExplanationSource {
  /** The peer's SPIFFE ID over mutual TLS (`spiffe://...`), else undefined. */
  principal: string | undefined;
  /** The connection's peer address. */
  peerIp: string;
}

/**
 * Compiles the audience once per setting.
 *
 * @returns true when the source may read the explanation
 */
export function explanationAudience(e: DenialExplanation): (source: ExplanationSource) => boolean {
  if (e.principals.length === 0 && e.ipBlocks.length === 0) return () => false;
  const principals: TextMatcher[] = e.principals.map((p) => wildcardMatcher(p));
  const blocks: CidrBlock[] = e.ipBlocks.map((b) => parseCidr(b)!);
  return (s) => {
    const body = s.principal?.startsWith("spiffe://") ? s.principal.slice("spiffe://".length) : "";
    if (body !== "" && principals.some((m) => m(body))) return true;
    const ip = parseIp(s.peerIp);
    return ip !== undefined && blocks.some((b) => cidrContains(b, ip));
  };
}
