/**
 * The differential test of the index: random policies and requests (seeded, reproducible), each
 * decided by the indexed evaluator and by the linear one (`index: false`), on HTTP and on TCP; the
 * decisions (allowed, policy, action, rule, reason, audit) must be identical. The values come from
 * small pools, so that keys collide, prefixes nest and wildcards, `not` fields and unkeyed fields
 * mix with keyed ones in one rule.
 */
import assert from "node:assert/strict";
import { compileAuthorization } from "./evaluate.ts";
import type {
  AuthorizationOperationView,
  AuthorizationPolicyView,
  AuthorizationRuleView,
  AuthorizationSourceView,
} from "./policy_view.ts";
import type { AuthorizationConnection, AuthorizationRequest } from "./request.ts";
import { CLAIM_VALUES_MAX, NAMESPACE_SEGMENTS_MAX } from "./rule_index.ts";

/** mulberry32: a small seeded PRNG, so that a failure names a reproducible case. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const POOL = {
  principals: [
    "cluster.local/ns/foo/sa/sleep",
    "cluster.local/ns/bar/sa/a",
    "td/ns/foo/sa/x",
    "cluster.local/*",
    "td/ns/*",
    "*/sa/sleep",
    "*sleep",
    "td*",
    "*",
    "",
  ],
  namespaces: ["foo", "bar", "ns", "sa", "f*", "*", "", "foo/sa"],
  requestPrincipals: [
    "iss1/sub1",
    "iss1/sub2",
    "iss1/*",
    "iss1/s*",
    "a/b/*",
    "*/sub1",
    "*1/sub1",
    "*/",
    "*/c",
    "iss*",
    "*sub1",
    "iss2",
    "*",
    "a/b/c",
  ],
  serviceAccounts: ["sleep", "foo/sleep", "bar/a", "ns/y", "bar/y"],
  trustDomains: ["cluster.local", "td", "*", "t*", "c*l", "*.local", "td/ns", ""],
  ipBlocks: [
    "10.0.0.0/8",
    "10.0.0.5",
    "192.168.0.0/16",
    "192.168.1.0/24",
    "10.0.0.0/7",
    "192.168.0.0/9",
    "0.0.0.0/0",
    "2001:db8::/32",
    "::ffff:10.0.0.0/104",
  ],
  hosts: [
    "httpbin.foo",
    "HTTPBIN.foo:8000",
    "*.foo",
    "*.FOO",
    "*:8000",
    "*.fok",
    "httpbin*",
    "HttpBin*",
    "*",
  ],
  ports: ["8000", "9000", "80"],
  methods: ["GET", "POST", "G*", "*", "get"],
  paths: ["/a", "/a/b", "/a/*", "/a*", "*/b", "*.js", "/api/{*}/items", "/api/{**}", "{**}", "*", "/", ""],
  headerValues: ["t1", "t2", "t*", "*", ""],
  snis: ["a.example", "b.example", "*.example"],
};
const CONDITIONS: [string, readonly string[]][] = [
  ["request.headers[x-t]", POOL.headerValues],
  ["request.headers[X-U]", POOL.headerValues],
  ["source.principal", POOL.principals],
  ["source.namespace", POOL.namespaces],
  ["source.serviceAccount", POOL.serviceAccounts],
  ["source.trustDomain", POOL.trustDomains],
  ["destination.port", POOL.ports],
  ["request.auth.principal", POOL.requestPrincipals],
  ["source.ip", POOL.ipBlocks],
  ["remote.ip", POOL.ipBlocks],
  ["destination.ip", POOL.ipBlocks],
  ["connection.sni", POOL.snis],
  ["request.auth.claims[groups]", ["g1", "g2", "g*"]],
  ["request.auth.claims[nested][level]", ["gold", "silver"]],
  ["request.auth.audiences", ["app", "web"]],
  ["request.auth.presenter", ["frontend", "front*"]],
];
/** JWT payloads: list and string claims, a nested one, and a list longer than the index reads. */
const CLAIMS: Record<string, unknown>[] = [
  { groups: ["g1"] },
  { groups: ["g2", "g1"] },
  { groups: "g2" },
  { groups: [...Array.from({ length: CLAIM_VALUES_MAX }, (_, i) => `x${i}`), "g1"] },
  { aud: ["app"], azp: "frontend", nested: { level: "gold" } },
  { aud: "web", azp: "frontend-2", nested: ["gold"] },
];
const SOURCE_FIELDS: [keyof AuthorizationSourceView, readonly string[]][] = [
  ["principals", POOL.principals],
  ["namespaces", POOL.namespaces],
  ["requestPrincipals", POOL.requestPrincipals],
  ["serviceAccounts", POOL.serviceAccounts],
  ["trustDomains", POOL.trustDomains],
  ["ipBlocks", POOL.ipBlocks],
  ["remoteIpBlocks", POOL.ipBlocks],
];
const OPERATION_FIELDS: [keyof AuthorizationOperationView, readonly string[]][] = [
  ["hosts", POOL.hosts],
  ["ports", POOL.ports],
  ["methods", POOL.methods],
  ["paths", POOL.paths],
];

class Gen {
  readonly #rand: () => number;
  constructor(seed: number) {
    this.#rand = prng(seed);
  }
  int(n: number): number {
    return Math.floor(this.#rand() * n);
  }
  chance(p: number): boolean {
    return this.#rand() < p;
  }
  pick<T>(list: readonly T[]): T {
    return list[this.int(list.length)];
  }
  values(pool: readonly string[]): string[] {
    return Array.from({ length: 1 + this.int(2) }, () => this.pick(pool));
  }
  /** Some fields of a source or operation, a quarter of them in their `not` form. */
  fields(table: readonly [string, readonly string[]][]): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (let n = 1 + this.int(2); n > 0; n--) {
      const [name, pool] = this.pick(table);
      out[this.chance(0.25) ? `not${name[0].toUpperCase()}${name.slice(1)}` : name] = this.values(pool);
    }
    return out;
  }
  rule(): AuthorizationRuleView {
    const list = <T>(make: () => T): T[] => Array.from({ length: this.int(3) }, make);
    return {
      from: list(() => ({ source: this.chance(0.1) ? null : this.fields(SOURCE_FIELDS) })),
      to: list(() => ({ operation: this.chance(0.1) ? null : this.fields(OPERATION_FIELDS) })),
      when: list(() => {
        const [key, pool] = this.pick(CONDITIONS);
        return this.chance(0.2) ? { key, notValues: this.values(pool) } : { key, values: this.values(pool) };
      }),
    };
  }
  policies(): AuthorizationPolicyView[] {
    return Array.from({ length: 1 + this.int(12) }, () => ({
      namespace: this.pick(["foo", "mesh-system"]),
      name: `p${this.int(8)}`,
      action: this.pick(["ALLOW", "ALLOW", "DENY", "AUDIT", undefined]),
      rules: this.chance(0.05) ? undefined : Array.from({ length: this.int(4) }, () => this.rule()),
    }));
  }
  request(): AuthorizationRequest {
    const many = Array.from({ length: NAMESPACE_SEGMENTS_MAX + 1 }, (_, i) => `ns/n${i}`).join("/");
    const token = this.pick([undefined, "iss1/sub1", "iss1/sub2", "iss2", "a/b/c", "iss1/", "/sub1", "a/b/"]);
    return {
      method: this.pick(["GET", "POST", "get", "GETX"]),
      path: this.pick(["/a", "/a/b", "/a/b/c", "/api/v1/items", "/api/", "/x.js", "/b", "/", ""]),
      pathNormalized: true,
      // U+0130 lower-cases to two code units, U+212A (Kelvin) to an ASCII k.
      host: this.pick([
        undefined,
        "httpbin.foo",
        "HttpBin.Foo:8000",
        "x.foo",
        "X.FOO",
        "httpbin.foo.evil",
        "\u0130.foo",
        "x.fo\u212A",
      ]),
      port: Number(this.pick(POOL.ports)),
      headers: this.pick<Record<string, string>>([{}, { "x-t": "t1" }, { "x-t": "t2", "x-u": "t1" }, {
        "x-u": "",
      }]),
      sourcePrincipal: this.pick([
        undefined,
        "spiffe://cluster.local/ns/foo/sa/sleep",
        "spiffe://cluster.local/ns/bar/sa/a",
        "spiffe://td/ns/foo/sa/x",
        "spiffe://td/ns/bar/sa/sleep",
        "spiffe://td.local/ns/foo/sa/sleep",
        "spiffe://td",
        "spiffe://",
        "spiffe://td/ns/ns/sa/sa/ns/bar/sa/y",
        `spiffe://td/${many}/ns/foo/sa/z`,
        "cluster.local/ns/foo/sa/sleep",
      ]),
      sourceIp: this.pick([
        "10.0.0.5",
        "192.168.1.1",
        "11.0.0.1",
        "192.200.1.1",
        "2001:db8::1",
        "::ffff:10.0.0.5",
        "x",
      ]),
      remoteIp: this.pick([undefined, "192.168.1.1", "2001:db8::1"]),
      destinationIp: this.pick([undefined, "10.0.0.5", "192.168.2.1"]),
      sni: this.pick([undefined, "a.example", "b.example"]),
      requestPrincipal: token,
      claims: token && this.chance(0.5) ? this.pick(CLAIMS) : undefined,
    };
  }
}

const SETS = 600;
const REQUESTS = 30;

Deno.test(`the index decides as the linear scan: ${SETS} random policy sets x ${REQUESTS} requests, HTTP and TCP`, () => {
  const gen = new Gen(17);
  let compared = 0;
  const kinds = new Map<string, number>();
  for (let s = 0; s < SETS; s++) {
    const policies = gen.policies();
    const indexed = compileAuthorization(policies);
    const linear = compileAuthorization(policies, { index: false });
    for (let r = 0; r < REQUESTS; r++) {
      const request = gen.request();
      const what = `set ${s} request ${r}: ${JSON.stringify({ policies, request })}`;
      const d = indexed.evaluate(request);
      assert.equal(JSON.stringify(d), JSON.stringify(linear.evaluate(request)), what);
      const kind = `${d.action ?? (d.allowed ? "no ALLOW policy" : "no rule matched")}${
        d.audit ? ", audited" : ""
      }`;
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      const connection: AuthorizationConnection = { ...request };
      assert.equal(
        JSON.stringify(indexed.evaluateConnection(connection)),
        JSON.stringify(linear.evaluateConnection(connection)),
        `TCP ${what}`,
      );
      compared += 2;
    }
  }
  assert.equal(compared, SETS * REQUESTS * 2);
  // Every outcome occurs often enough to be compared, with and without an AUDIT match.
  for (const kind of ["DENY", "ALLOW", "no ALLOW policy", "no rule matched"]) {
    for (const k of [kind, `${kind}, audited`]) {
      assert.ok((kinds.get(k) ?? 0) > SETS * REQUESTS / 200, `${k}: ${JSON.stringify([...kinds])}`);
    }
  }
});

Deno.test("the index finds a rule under each of a request's /ns/ segments, and past the limit by the linear scan", () => {
  const policies: AuthorizationPolicyView[] = [
    { namespace: "foo", name: "a", action: "DENY", rules: [{ from: [{ source: { namespaces: ["bar"] } }] }] },
  ];
  const c = compileAuthorization(policies);
  const at = (principal: string) =>
    c.evaluate({ method: "GET", path: "/", port: 80, sourcePrincipal: principal });
  assert.equal(at("spiffe://td/ns/foo/sa/ns/bar/x").allowed, false);
  assert.equal(at("spiffe://td/ns/ns/bar/sa/x").allowed, false);
  assert.equal(at("spiffe://td/ns/foo/sa/bar").allowed, true);
  const deep = Array.from({ length: NAMESPACE_SEGMENTS_MAX }, (_, i) => `ns/n${i}`).join("/");
  assert.equal(at(`spiffe://td/${deep}/ns/bar/sa/x`).allowed, false);
});
