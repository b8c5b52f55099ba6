/**
 * Compiled matchers: a predicate on the request (prepared once per evaluation), and how
 * predicates combine: a field matches when any value does and no `not` value does, a rule when all
 * its parts do.
 *
 * @module
 */
import type { AuthorizationRequest } from "./request.ts";
import type { AuthorizationValueList } from "./policy_view.ts";
import type { IpBytes } from "./ip_block.ts";

/** The request as matchers read it, computed once per evaluation. */
export interface Prepared {
  r: AuthorizationRequest;
  path: string;
  /** The peer principal, `spiffe://` included, or "" for plain text. */
  principal: string;
  /** The principal without `spiffe://` (Istio's principal form), or "" for plain text. */
  principalBody: string;
  iss: string | undefined;
  sub: string | undefined;
  sourceIp: IpBytes | null | undefined;
  remoteIp: IpBytes | null | undefined;
  destinationIp: IpBytes | null | undefined;
}

export type Predicate = (p: Prepared) => boolean;

function listOf(l: AuthorizationValueList): readonly string[] {
  return l ?? [];
}

/** True when any predicate is; undefined (no constraint) for an empty list. */
export function anyPredicate(ps: Predicate[]): Predicate | undefined {
  if (ps.length <= 1) return ps[0];
  return (p) => {
    for (let i = 0; i < ps.length; i++) if (ps[i](p)) return true;
    return false;
  };
}

function anyOf(values: readonly string[], make: (v: string) => Predicate): Predicate {
  return anyPredicate(values.map(make))!;
}

/** The field's predicate: `values` any-match and `notValues` none-match, or undefined when unset. */
export function field(
  values: AuthorizationValueList,
  notValues: AuthorizationValueList,
  make: (v: string) => Predicate,
): Predicate | undefined {
  const yes = listOf(values).length > 0 ? anyOf(listOf(values), make) : undefined;
  const no = listOf(notValues).length > 0 ? anyOf(listOf(notValues), make) : undefined;
  if (yes && no) return (p) => yes(p) && !no(p);
  if (yes) return yes;
  if (no) return (p) => !no(p);
  return undefined;
}

export function allOf(ps: (Predicate | undefined)[]): Predicate {
  const list = ps.filter((p): p is Predicate => p !== undefined);
  if (list.length === 0) return () => true;
  if (list.length === 1) return list[0];
  return (p) => {
    for (let i = 0; i < list.length; i++) if (!list[i](p)) return false;
    return true;
  };
}
