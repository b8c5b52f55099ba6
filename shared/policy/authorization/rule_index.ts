/**
 * The rules of one action, indexed by their keys (rule_keys.ts): the first rule, in evaluation
 * order, that matches a request, found by evaluating only the rules filed under the request's own
 * attributes and the rules without keys.
 *
 * Shapes: each key kind is a map from the key's hash (key_hash.ts) to a posting list (ascending
 * rule positions). Prefixes and suffixes (of the path, the Host in lower case, and the peer principal
 * without `spiffe://`) are hashed as the text is read from either end, and looked up at the lengths that keys have. A
 * request gathers at most one list per attribute (one per prefix and suffix length, one per `/ns/`
 * segment of its principal); the lists are merged in
 * ascending order, so the first rule that matches is the same as the linear scan's. A rule filed
 * under keys of several attributes is evaluated once. A request with more than
 * {@link NAMESPACE_SEGMENTS_MAX} `/ns/` segments in its principal, or a list claim of more than
 * {@link CLAIM_VALUES_MAX} elements that a key reads, is decided by the linear scan.
 *
 * Per request: no allocation (the scratch lists are the index's own; evaluation is synchronous)
 * but a lower-case copy of a Host with capitals when host patterns are keyed, and the peer
 * principal's lookups only when it differs from the previous request's.
 *
 * @module
 */
import type { Predicate, Prepared } from "./predicate.ts";
import { ipKeyOf, type RuleKey } from "./rule_keys.ts";
import { type IpAttribute, ipOf } from "./field_matchers.ts";
import { claimAt } from "./condition_matchers.ts";
import {
  HASH_START,
  hashKey,
  hashPrincipal,
  hashRange,
  hashStep,
  hashText,
  hashTextBackwards,
  hashTextFolded,
} from "./key_hash.ts";

/** A rule as the index holds it. */
export interface IndexedRule {
  /** Its matcher. */
  test: Predicate;
  /** Its keys (rule_keys.ts); undefined: evaluated for every request. */
  keys: readonly RuleKey[] | undefined;
}

/** Rule positions, ascending. */
type Postings = number[];

/** More `/ns/` segments than a SPIFFE ID has: such a request is decided by the linear scan. */
export const NAMESPACE_SEGMENTS_MAX = 4;

/** A list claim with more elements (e.g. many `groups`) is decided by the linear scan. */
export const CLAIM_VALUES_MAX = 16;

const EMPTY: Postings = [];

function byScope(map: Map<string, Map<number, Postings>>, scope: string): Map<number, Postings> {
  let byValue = map.get(scope);
  if (!byValue) map.set(scope, byValue = new Map());
  return byValue;
}

function add(map: Map<number, Postings>, key: number, rule: number): void {
  const list = map.get(key);
  if (!list) map.set(key, [rule]);
  else if (list[list.length - 1] !== rule) list.push(rule);
}

/** Keys of one kind of text end (prefix or suffix): by hash, and the lengths they have. */
class TextEnds {
  readonly byHash = new Map<number, Postings>();
  /** `lengths[n]` is 1 when some key has n code units. */
  lengths = new Uint8Array(0);
  /** Number of distinct lengths. */
  count = 0;

  add(text: string, hash: number, rule: number): void {
    if (text.length >= this.lengths.length) {
      const grown = new Uint8Array(text.length + 1);
      grown.set(this.lengths);
      this.lengths = grown;
    }
    if (this.lengths[text.length] === 0) this.count++;
    this.lengths[text.length] = 1;
    add(this.byHash, hash, rule);
  }
}

/** The rules of one action and layer, in evaluation order, and their index. */
export class RuleIndex {
  /** Number of rules. */
  readonly size: number;
  readonly #tests: readonly Predicate[];
  readonly #all: Postings;
  readonly #residual: Postings = [];
  readonly #principal = new Map<number, Postings>();
  /** Of the principal without `spiffe://` (principals `x*` and `*x`, trust domains). */
  readonly #principalPrefix = new TextEnds();
  readonly #principalSuffix = new TextEnds();
  readonly #namespace = new Map<number, Postings>();
  /** By the hash of subject and issuer length. */
  readonly #requestPrincipal = new Map<number, Postings>();
  readonly #requestIssuer = new Map<number, Postings>();
  readonly #requestSubject = new Map<number, Postings>();
  readonly #host = new Map<number, Postings>();
  readonly #hostPrefix = new TextEnds();
  readonly #hostSuffix = new TextEnds();
  readonly #sni = new Map<number, Postings>();
  readonly #port = new Map<number, Postings>();
  readonly #method = new Map<number, Postings>();
  readonly #path = new Map<number, Postings>();
  readonly #prefix = new TextEnds();
  readonly #suffix = new TextEnds();
  /** Header name (lower case), then value hash. */
  readonly #headers = new Map<string, Map<number, Postings>>();
  readonly #headerNames: readonly string[];
  readonly #headerValues: readonly Map<number, Postings>[];
  /** `<attribute>/<bits>`, then the address key (rule_keys.ts' ipKeyOf). */
  readonly #ips = new Map<string, Map<number, Postings>>();
  readonly #ipScopes: readonly { which: IpAttribute; bits: 8 | 16 }[];
  readonly #ipValues: readonly Map<number, Postings>[];
  /** Claim path (JSON), then value hash. */
  readonly #claims = new Map<string, Map<number, Postings>>();
  readonly #claimPaths: readonly string[][];
  readonly #claimValues: readonly Map<number, Postings>[];
  /**
   * The lists of the last peer principal seen, and how many (-1: use the linear scan): the requests
   * of one connection share their principal, so it is hashed once per connection, not per request.
   */
  #peer = "";
  #peerCount = 0;
  readonly #peerCache: Postings[];
  /** Some rule has a key of the peer principal. */
  readonly #peerKeyed: boolean;
  /** Some rule has a key of the JWT principal. */
  readonly #jwtKeyed: boolean;
  /** Scratch of one evaluation: the gathered lists and the merge's position in each. */
  readonly #lists: Postings[];
  readonly #pos: Int32Array;

  /**
   * Files each rule under its keys.
   *
   * @param rules the rules in evaluation order (policy order, then rule order)
   * @param indexed false: every rule is evaluated for every request (the linear scan)
   */
  constructor(rules: readonly IndexedRule[], indexed: boolean) {
    this.size = rules.length;
    this.#tests = rules.map((r) => r.test);
    this.#all = rules.map((_, i) => i);
    rules.forEach((r, i) => {
      if (!indexed || r.keys === undefined) return this.#residual.push(i);
      for (const k of r.keys) this.#file(k, i);
    });
    this.#headerNames = [...this.#headers.keys()];
    this.#headerValues = [...this.#headers.values()];
    this.#claimPaths = [...this.#claims.keys()].map((k) => JSON.parse(k));
    this.#claimValues = [...this.#claims.values()];
    this.#ipScopes = [...this.#ips.keys()].map((k) => {
      const [which, bits] = k.split("/");
      return { which: which as IpAttribute, bits: bits === "16" ? 16 : 8 };
    });
    this.#ipValues = [...this.#ips.values()];
    const peerLists = 1 + NAMESPACE_SEGMENTS_MAX + this.#principalPrefix.count + this.#principalSuffix.count;
    this.#peerCache = new Array<Postings>(peerLists).fill(EMPTY);
    this.#peerKeyed = this.#principal.size > 0 || this.#namespace.size > 0 ||
      this.#principalPrefix.count > 0 ||
      this.#principalSuffix.count > 0;
    this.#jwtKeyed = this.#requestPrincipal.size > 0 || this.#requestIssuer.size > 0 ||
      this.#requestSubject.size > 0;
    const lists = 11 + peerLists + this.#prefix.count + this.#suffix.count + this.#hostPrefix.count +
      this.#hostSuffix.count + this.#headerNames.length +
      this.#claimPaths.length * CLAIM_VALUES_MAX + this.#ipScopes.length;
    this.#lists = new Array<Postings>(lists).fill(EMPTY);
    this.#pos = new Int32Array(lists);
  }

  /** Files rule `i` under key `k`. */
  #file(k: RuleKey, i: number): void {
    const v = String(k.value);
    switch (k.kind) {
      case "principal":
        return add(this.#principal, hashText(v), i);
      case "principalPrefix":
        return this.#principalPrefix.add(v, hashText(v), i);
      case "principalSuffix":
        return this.#principalSuffix.add(v, hashTextBackwards(v), i);
      case "namespace":
        return add(this.#namespace, hashText(v), i);
      case "requestPrincipal":
        return add(this.#requestPrincipal, hashPrincipal(k.scope, v), i);
      case "requestIssuer":
        return add(this.#requestIssuer, hashText(v), i);
      case "requestSubject":
        return add(this.#requestSubject, hashText(v), i);
      case "host":
        return add(this.#host, hashTextFolded(v), i);
      case "hostPrefix":
        return this.#hostPrefix.add(v, hashText(v), i);
      case "hostSuffix":
        return this.#hostSuffix.add(v, hashTextBackwards(v), i);
      case "sni":
        return add(this.#sni, hashText(v), i);
      case "port":
        return add(this.#port, Number(k.value), i);
      case "method":
        return add(this.#method, hashText(v), i);
      case "path":
        return add(this.#path, hashText(v), i);
      case "pathPrefix":
        return this.#prefix.add(v, hashText(v), i);
      case "pathSuffix":
        return this.#suffix.add(v, hashTextBackwards(v), i);
      case "header":
        return add(byScope(this.#headers, k.scope), hashText(v), i);
      case "claim":
        return add(byScope(this.#claims, k.scope), hashText(v), i);
      case "ip":
        return add(byScope(this.#ips, k.scope), Number(k.value), i);
    }
  }

  /**
   * The first rule that matches, as the linear scan would find it.
   *
   * @returns the rule's position in the constructor's list, or -1 when none matches
   */
  firstMatch(p: Prepared): number {
    const k = this.#gather(p);
    if (k < 0) return this.#scan(this.#all, p);
    if (k === 0) return -1;
    if (k === 1) return this.#scan(this.#lists[0], p);
    return this.#merge(k, p);
  }

  #scan(list: Postings, p: Prepared): number {
    const tests = this.#tests;
    for (let i = 0; i < list.length; i++) if (tests[list[i]](p)) return list[i];
    return -1;
  }

  /**
   * Evaluates the gathered lists' rules in ascending order, each once: the list with the lowest
   * head is read on while its rules come before every other list's head.
   */
  #merge(k: number, p: Prepared): number {
    const lists = this.#lists;
    const pos = this.#pos;
    const tests = this.#tests;
    pos.fill(0, 0, k);
    let last = -1;
    for (;;) {
      let best = -1;
      let min = 0x7fffffff;
      let next = 0x7fffffff;
      for (let i = 0; i < k; i++) {
        const j = pos[i];
        const l = lists[i];
        if (j >= l.length) continue;
        if (l[j] < min) {
          next = min;
          min = l[j];
          best = i;
        } else if (l[j] < next) next = l[j];
      }
      if (best < 0) return -1;
      const l = lists[best];
      let j = pos[best];
      // A rule offered by two lists (equal to `next`) is evaluated here, and skipped as `last` there.
      for (; j < l.length && l[j] <= next; j++) {
        const rule = l[j];
        if (rule === last) continue;
        last = rule;
        if (tests[rule](p)) return rule;
      }
      pos[best] = j;
    }
  }

  /** Puts the lists of the request's attributes in the scratch; -1: use the linear scan. */
  #gather(p: Prepared): number {
    const lists = this.#lists;
    let k = 0;
    let l: Postings | undefined;
    if (this.#residual.length > 0) lists[k++] = this.#residual;
    if (this.#peerKeyed) {
      if (p.principal !== this.#peer) {
        this.#peer = p.principal;
        this.#peerCount = this.#peerLists(p);
      }
      if (this.#peerCount < 0) return -1;
      for (let i = 0; i < this.#peerCount; i++) lists[k++] = this.#peerCache[i];
    }
    if (this.#jwtKeyed && p.iss !== undefined && p.sub !== undefined) {
      if (this.#requestPrincipal.size > 0 && (l = this.#requestPrincipal.get(hashPrincipal(p.iss, p.sub)))) {
        lists[k++] = l;
      }
      if (this.#requestSubject.size > 0 && (l = this.#requestSubject.get(hashText(p.sub)))) lists[k++] = l;
      if (this.#requestIssuer.size > 0 && (l = this.#requestIssuer.get(hashText(p.iss)))) lists[k++] = l;
    }
    const r = p.r;
    if (this.#host.size > 0 && r.host !== undefined && (l = this.#host.get(hashTextFolded(r.host)))) {
      lists[k++] = l;
    }
    if (r.host !== undefined && (this.#hostPrefix.count > 0 || this.#hostSuffix.count > 0)) {
      // As the host matcher compares it.
      const host = r.host.toLowerCase();
      if (this.#hostPrefix.count > 0) k = endLists(this.#hostPrefix, host, 0, false, lists, k);
      if (this.#hostSuffix.count > 0) k = endLists(this.#hostSuffix, host, 0, true, lists, k);
    }
    if (this.#sni.size > 0 && r.sni !== undefined && (l = this.#sni.get(hashText(r.sni)))) lists[k++] = l;
    if (this.#port.size > 0 && (l = this.#port.get(r.port))) lists[k++] = l;
    if (this.#method.size > 0 && typeof r.method === "string" && (l = this.#method.get(hashText(r.method)))) {
      lists[k++] = l;
    }
    if (this.#path.size > 0 && (l = this.#path.get(hashText(p.path)))) lists[k++] = l;
    if (this.#prefix.count > 0) k = endLists(this.#prefix, p.path, 0, false, lists, k);
    if (this.#suffix.count > 0) k = endLists(this.#suffix, p.path, 0, true, lists, k);
    const headers = r.headers;
    if (headers !== undefined) {
      for (let i = 0; i < this.#headerNames.length; i++) {
        const h = headers[this.#headerNames[i]];
        if (typeof h === "string" && (l = this.#headerValues[i].get(hashText(h)))) lists[k++] = l;
      }
    }
    for (let i = 0; i < this.#ipScopes.length; i++) {
      const { which, bits } = this.#ipScopes[i];
      const ip = ipOf(p, which);
      if (ip !== null && (l = this.#ipValues[i].get(ipKeyOf(ip, bits)))) lists[k++] = l;
    }
    return r.claims !== undefined && this.#claimPaths.length > 0 ? this.#claimLists(r.claims, k) : k;
  }

  /** Adds the lists of each claim value (claimMatcher: a string claim, or a list's strings). */
  #claimLists(claims: Readonly<Record<string, unknown>>, k: number): number {
    let l: Postings | undefined;
    for (let i = 0; i < this.#claimPaths.length; i++) {
      const c = claimAt(claims, this.#claimPaths[i]);
      const values = this.#claimValues[i];
      if (typeof c === "string") {
        if ((l = values.get(hashText(c)))) this.#lists[k++] = l;
      } else if (Array.isArray(c)) {
        if (c.length > CLAIM_VALUES_MAX) return -1;
        for (const e of c) if (typeof e === "string" && (l = values.get(hashText(e)))) this.#lists[k++] = l;
      }
    }
    return k;
  }

  /** Puts the lists of the peer principal in the peer cache; -1: use the linear scan. */
  #peerLists(p: Prepared): number {
    let k = 0;
    let l: Postings | undefined;
    const cache = this.#peerCache;
    // principalBody is principal without `spiffe://`: hashed in place, as a slice reads slower.
    if (p.principalBody !== "") {
      if (
        this.#principal.size > 0 &&
        (l = this.#principal.get(hashKey(hashRange(p.principal, 9, p.principal.length))))
      ) {
        cache[k++] = l;
      }
      if (this.#principalPrefix.count > 0) {
        k = endLists(this.#principalPrefix, p.principal, 9, false, cache, k);
      }
      if (this.#principalSuffix.count > 0) {
        k = endLists(this.#principalSuffix, p.principal, 9, true, cache, k);
      }
    }
    return this.#namespace.size > 0 && p.principal !== "" ? this.#namespaces(p.principal, k) : k;
  }

  /** Adds the lists of each `/ns/<segment>/` of the principal (namespaceMatcher's `includes`). */
  #namespaces(principal: string, k: number): number {
    let from = 0;
    for (let n = 0;; n++) {
      const at = principal.indexOf("/ns/", from);
      if (at < 0) return k;
      const end = principal.indexOf("/", at + 4);
      if (end < 0) return k;
      if (n === NAMESPACE_SEGMENTS_MAX) return -1;
      const l = this.#namespace.get(hashKey(hashRange(principal, at + 4, end)));
      if (l) this.#peerCache[k++] = l;
      from = at + 1;
    }
  }
}

/**
 * Puts in `out` from `k` the lists of the prefixes (or suffixes) of `text` from `from` on, of the
 * lengths that keys have.
 *
 * @returns the new number of lists in `out`
 */
function endLists(
  ends: TextEnds,
  text: string,
  from: number,
  backwards: boolean,
  out: Postings[],
  k: number,
): number {
  const lengths = ends.lengths;
  const n = Math.min(text.length - from, lengths.length - 1);
  let h = HASH_START;
  for (let i = 1; i <= n; i++) {
    h = hashStep(h, text.charCodeAt(backwards ? text.length - i : from + i - 1));
    if (lengths[i] === 1) {
      const l = ends.byHash.get(hashKey(h));
      if (l) out[k++] = l;
    }
  }
  return k;
}
