/**
 * The rules of one action, indexed by their keys (rule_keys.ts): the first rule, in evaluation
 * order, that matches a request, found by evaluating only the rules filed under the request's own
 * attributes and the rules without keys.
 *
 * Shapes: each key kind is a map from value to a posting list (ascending rule positions; a path
 * prefix or suffix a character trie, walked along the path from either end); a request gathers
 * at most one list per attribute (one per prefix and suffix that it has, one per `/ns/` segment of
 * its principal), and the lists are merged in ascending order, so the first rule that matches is
 * the same as the linear scan's. A rule filed under keys of several attributes is evaluated once.
 * A request with more than {@link NAMESPACE_SEGMENTS_MAX} `/ns/` segments in its principal is
 * decided by the linear scan.
 *
 * Per request: no allocation but one string per `/ns/` segment and a lower-cased Host (V8 returns
 * the same string when it is lower case already).
 *
 * @module
 */
import type { Predicate, Prepared } from "./predicate.ts";
import type { RuleKey } from "./rule_keys.ts";

/** A rule as the index holds it. */
export interface IndexedRule {
  /** Its matcher. */
  test: Predicate;
  /** Its keys (rule_keys.ts); undefined: evaluated for every request. */
  keys: readonly RuleKey[] | undefined;
}

/** Rule positions, ascending. */
type Postings = number[];

/** One character of a path prefix (or of a suffix, read backwards). */
class TrieNode {
  children: Map<number, TrieNode> | undefined;
  postings: Postings | undefined;
}

/** More `/ns/` segments than a SPIFFE ID has: such a request is decided by the linear scan. */
export const NAMESPACE_SEGMENTS_MAX = 4;

const EMPTY: Postings = [];

function add<K>(map: Map<K, Postings>, key: K, rule: number): void {
  const list = map.get(key);
  if (list) list.push(rule);
  else map.set(key, [rule]);
}

function addToTrie(root: TrieNode, text: string, backwards: boolean, rule: number): number {
  let node = root;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(backwards ? text.length - 1 - i : i);
    node.children ??= new Map();
    let next = node.children.get(c);
    if (!next) node.children.set(c, next = new TrieNode());
    node = next;
  }
  if (node.postings) {
    node.postings.push(rule);
    return 0;
  }
  node.postings = [rule];
  return 1;
}

/** The rules of one action and layer, in evaluation order, and their index. */
export class RuleIndex {
  /** Number of rules. */
  readonly size: number;
  readonly #tests: readonly Predicate[];
  readonly #all: Postings;
  readonly #residual: Postings = [];
  readonly #principal = new Map<string, Postings>();
  readonly #namespace = new Map<string, Postings>();
  /** JWT issuer, then subject. */
  readonly #requestPrincipal = new Map<string, Map<string, Postings>>();
  readonly #host = new Map<string, Postings>();
  readonly #port = new Map<number, Postings>();
  readonly #method = new Map<string, Postings>();
  readonly #path = new Map<string, Postings>();
  readonly #prefix = new TrieNode();
  readonly #suffix = new TrieNode();
  /** Header name (lower case), then value. */
  readonly #headers = new Map<string, Map<string, Postings>>();
  readonly #headerNames: readonly string[];
  readonly #headerValues: readonly Map<string, Postings>[];
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
    let trieLists = 0;
    rules.forEach((r, i) => {
      if (!indexed || r.keys === undefined) return this.#residual.push(i);
      for (const k of r.keys) trieLists += this.#file(k, i);
    });
    this.#headerNames = [...this.#headers.keys()];
    this.#headerValues = [...this.#headers.values()];
    const lists = 8 + NAMESPACE_SEGMENTS_MAX + trieLists + this.#headerNames.length;
    this.#lists = new Array<Postings>(lists).fill(EMPTY);
    this.#pos = new Int32Array(lists);
  }

  /** Files rule `i` under key `k`; returns 1 when it made a new trie posting list. */
  #file(k: RuleKey, i: number): number {
    const v = k.value;
    switch (k.kind) {
      case "principal":
        add(this.#principal, String(v), i);
        return 0;
      case "namespace":
        add(this.#namespace, String(v), i);
        return 0;
      case "requestPrincipal": {
        let bySub = this.#requestPrincipal.get(k.scope);
        if (!bySub) this.#requestPrincipal.set(k.scope, bySub = new Map());
        add(bySub, String(v), i);
        return 0;
      }
      case "host":
        add(this.#host, String(v), i);
        return 0;
      case "port":
        add(this.#port, Number(v), i);
        return 0;
      case "method":
        add(this.#method, String(v), i);
        return 0;
      case "path":
        add(this.#path, String(v), i);
        return 0;
      case "pathPrefix":
        return addToTrie(this.#prefix, String(v), false, i);
      case "pathSuffix":
        return addToTrie(this.#suffix, String(v), true, i);
      case "header": {
        let byValue = this.#headers.get(k.scope);
        if (!byValue) this.#headers.set(k.scope, byValue = new Map());
        add(byValue, String(v), i);
        return 0;
      }
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

  /** Evaluates the gathered lists' rules in ascending order, each once. */
  #merge(k: number, p: Prepared): number {
    const lists = this.#lists;
    const pos = this.#pos;
    pos.fill(0, 0, k);
    let last = -1;
    for (;;) {
      let best = -1;
      let min = 0x7fffffff;
      for (let i = 0; i < k; i++) {
        const j = pos[i];
        const l = lists[i];
        if (j < l.length && l[j] < min) {
          min = l[j];
          best = i;
        }
      }
      if (best < 0) return -1;
      pos[best]++;
      if (min === last) continue;
      last = min;
      if (this.#tests[min](p)) return min;
    }
  }

  /** Puts the lists of the request's attributes in the scratch; -1: use the linear scan. */
  #gather(p: Prepared): number {
    const lists = this.#lists;
    let k = 0;
    let l: Postings | undefined;
    if (this.#residual.length > 0) lists[k++] = this.#residual;
    if (this.#principal.size > 0 && p.principalBody !== "" && (l = this.#principal.get(p.principalBody))) {
      lists[k++] = l;
    }
    if (this.#namespace.size > 0 && p.principal !== "" && (k = this.#namespaces(p.principal, k)) < 0) {
      return -1;
    }
    if (this.#requestPrincipal.size > 0 && p.iss !== undefined && p.sub !== undefined) {
      if ((l = this.#requestPrincipal.get(p.iss)?.get(p.sub))) lists[k++] = l;
    }
    const r = p.r;
    if (this.#host.size > 0 && r.host !== undefined && (l = this.#host.get(r.host.toLowerCase()))) {
      lists[k++] = l;
    }
    if (this.#port.size > 0 && (l = this.#port.get(r.port))) lists[k++] = l;
    if (this.#method.size > 0 && (l = this.#method.get(r.method))) lists[k++] = l;
    if (this.#path.size > 0 && (l = this.#path.get(p.path))) lists[k++] = l;
    if (this.#prefix.children) k = this.#walk(this.#prefix, p.path, false, k);
    if (this.#suffix.children) k = this.#walk(this.#suffix, p.path, true, k);
    const headers = r.headers;
    if (headers !== undefined) {
      for (let i = 0; i < this.#headerNames.length; i++) {
        const h = headers[this.#headerNames[i]];
        if (h !== undefined && (l = this.#headerValues[i].get(h))) lists[k++] = l;
      }
    }
    return k;
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
      const l = this.#namespace.get(principal.slice(at + 4, end));
      if (l) this.#lists[k++] = l;
      from = at + 1;
    }
  }

  /** Adds the lists of every prefix (or suffix) of the path that rules are filed under. */
  #walk(root: TrieNode, path: string, backwards: boolean, k: number): number {
    let node: TrieNode | undefined = root;
    const n = path.length;
    for (let i = 0; node !== undefined; i++) {
      if (node.postings) this.#lists[k++] = node.postings;
      if (i === n || node.children === undefined) break;
      node = node.children.get(path.charCodeAt(backwards ? n - 1 - i : i));
    }
    return k;
  }
}
