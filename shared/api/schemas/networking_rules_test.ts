import assert from "node:assert/strict";
import { formatFieldPath } from "../finding.ts";
import {
  checkExportTo,
  checkLabels,
  checkPercent,
  checkStringMatch,
  fqdnProblem,
  hostsOverlap,
  hostSubsetOf,
  parseProtocol,
  partialWildcardProblem,
  re2Problem,
  unixAddressProblem,
  wildcardDomainProblem,
} from "./networking_rules.ts";
import { isIp, isIpOrCidr } from "./ip.ts";
import { checkDuration, parseDuration } from "./duration.ts";

interface PredicateCase {
  name: string;
  run: () => unknown;
  want: unknown;
}

const predicates: PredicateCase[] = [
  { name: "duration: protobuf seconds", run: () => parseDuration("1.5s"), want: 1_500_000_000n },
  { name: "duration: Go form with minutes", run: () => parseDuration("1m30s"), want: 90_000_000_000n },
  { name: "duration: milliseconds", run: () => parseDuration("500ms"), want: 500_000_000n },
  { name: "duration: hours", run: () => parseDuration("24h"), want: 86_400_000_000_000n },
  { name: "duration: leading dot", run: () => parseDuration(".5s"), want: 500_000_000n },
  { name: "duration: negative", run: () => parseDuration("-1s"), want: -1_000_000_000n },
  { name: "duration: bare zero", run: () => parseDuration("0"), want: 0n },
  { name: "duration: no unit is not a duration", run: () => parseDuration("5"), want: undefined },
  { name: "duration: unknown unit", run: () => parseDuration("5d"), want: undefined },
  { name: "duration: only a dot", run: () => parseDuration(".s"), want: undefined },
  { name: "duration: trailing garbage", run: () => parseDuration("5s "), want: undefined },
  { name: "protocol: case-insensitive", run: () => parseProtocol("grpc-web"), want: "GRPC-WEB" },
  { name: "protocol: unknown", run: () => parseProtocol("FTP"), want: undefined },
  { name: "ip: v4", run: () => isIp("10.1.2.3"), want: true },
  { name: "ip: v4 out of range", run: () => isIp("10.1.2.256"), want: false },
  { name: "ip: v4 leading zero", run: () => isIp("10.01.2.3"), want: false },
  { name: "ip: v6 compressed", run: () => isIp("2001:db8::1"), want: true },
  { name: "ip: v6 full", run: () => isIp("2001:db8:0:0:0:0:0:1"), want: true },
  { name: "ip: v6 with v4 tail", run: () => isIp("::ffff:10.0.0.1"), want: true },
  { name: "ip: v6 two ::", run: () => isIp("1::2::3"), want: false },
  { name: "ip: v6 too many groups", run: () => isIp("1:2:3:4:5:6:7:8:9"), want: false },
  { name: "ip: hostname", run: () => isIp("example.com"), want: false },
  { name: "cidr: v4", run: () => isIpOrCidr("192.192.192.192/24"), want: true },
  { name: "cidr: v6", run: () => isIpOrCidr("2001:db8::/32"), want: true },
  { name: "cidr: bits too large", run: () => isIpOrCidr("10.0.0.0/33"), want: false },
  { name: "cidr: two slashes", run: () => isIpOrCidr("10.0.0.0/8/8"), want: false },
  { name: "fqdn: ok with trailing dot", run: () => fqdnProblem("istio.io."), want: undefined },
  { name: "fqdn: numeric TLD", run: () => fqdnProblem("1.2.3.4"), want: 'top level domain "4"' },
  {
    name: "fqdn: wildcard is not an FQDN",
    run: () => fqdnProblem("*.example.com"),
    want: 'label "*" invalid',
  },
  { name: "wildcard domain: *.x", run: () => wildcardDomainProblem("*.example.com"), want: undefined },
  { name: "wildcard domain: *foo.x", run: () => wildcardDomainProblem("*foo.example.com"), want: undefined },
  { name: "wildcard domain: short name", run: () => wildcardDomainProblem("reviews"), want: undefined },
  {
    name: "wildcard domain: inner wildcard",
    run: () => wildcardDomainProblem("a.*.com"),
    want: 'label "*" invalid',
  },
  { name: "wildcard domain: empty", run: () => wildcardDomainProblem(""), want: "empty domain name" },
  { name: "partial wildcard", run: () => partialWildcardProblem("*foo.com"), want: "partial wildcard" },
  { name: "hosts overlap: wildcard covers", run: () => hostsOverlap("*.foo.com", "a.foo.com"), want: true },
  { name: "hosts overlap: wildcards nest", run: () => hostsOverlap("*.com", "*.foo.com"), want: true },
  { name: "hosts overlap: disjoint", run: () => hostsOverlap("a.com", "b.com"), want: false },
  { name: "host subset: name in wildcard", run: () => hostSubsetOf("a.foo.com", "*.foo.com"), want: true },
  {
    name: "host subset: wildcard not in name",
    run: () => hostSubsetOf("*.foo.com", "a.foo.com"),
    want: false,
  },
  { name: "unix: abstract socket", run: () => unixAddressProblem("@sock"), want: undefined },
  { name: "unix: relative path", run: () => unixAddressProblem("var/sock"), want: "not an absolute path" },
  { name: "unix: directory", run: () => unixAddressProblem("/var/"), want: "not an absolute path" },
  { name: "re2: plain", run: () => re2Problem("^/api/v[0-9]+/.*$"), want: undefined },
  { name: "re2: named group P<>", run: () => re2Problem("(?P<ver>v[0-9])"), want: undefined },
  { name: "re2: inline flags", run: () => re2Problem("(?i)^/API"), want: undefined },
  { name: "re2: look-ahead", run: () => re2Problem("foo(?=bar)"), want: "look-around" },
  { name: "re2: back-reference", run: () => re2Problem("(a)\\1"), want: "back-references" },
  { name: "re2: unbalanced", run: () => re2Problem("(abc"), want: "invalid regex" },
  { name: "re2: too long", run: () => re2Problem("a".repeat(1025)), want: "too large" },
];

for (const c of predicates) {
  Deno.test(`networking_rules: ${c.name}`, () => {
    const got = c.run();
    if (typeof c.want === "string") {
      assert.match(String(got), new RegExp(c.want.replace(/[*.()[\]]/g, "\\$&")));
    } else assert.equal(got, c.want);
  });
}

interface FindingCase {
  name: string;
  run: () => ReturnType<typeof checkDuration>;
  /** Expected `path: message fragment`, or nothing for no findings. */
  want?: [string, string];
}

const findingCases: FindingCase[] = [
  { name: "checkDuration: ok", run: () => checkDuration("0.5s", ["t"]) },
  { name: "checkDuration: Go style ok", run: () => checkDuration("1m30s", ["t"]) },
  {
    name: "checkDuration: not a duration",
    run: () => checkDuration("5 seconds", ["t"]),
    want: ["t", "is not a duration"],
  },
  { name: "checkDuration: below 1ms", run: () => checkDuration("0s", ["t"]), want: ["t", "at least 1ms"] },
  {
    name: "checkDuration: sub-ms precision",
    run: () => checkDuration("1.0005s", ["t"]),
    want: ["t", "finer than 1ms"],
  },
  {
    name: "checkDuration: seconds only",
    run: () => checkDuration("1.5s", ["t"], true),
    want: ["t", "whole seconds"],
  },
  { name: "checkLabels: ok", run: () => checkLabels({ "app.kubernetes.io/name": "x", v: "" }, ["l"]) },
  {
    name: "checkLabels: bad key",
    run: () => checkLabels({ "-x": "y" }, ["l"]),
    want: ['l["-x"]', "invalid label key"],
  },
  {
    name: "checkLabels: bad value",
    run: () => checkLabels({ x: "a b" }, ["l"]),
    want: ["l.x", "invalid label value"],
  },
  {
    name: "checkLabels: long name",
    run: () => checkLabels({ ["a".repeat(64)]: "" }, ["l"]),
    want: [`l.${"a".repeat(64)}`, "longer than 63"],
  },
  { name: "checkExportTo: ok", run: () => checkExportTo([".", "other"], "ns", ["e"], false) },
  {
    name: "checkExportTo: . and own namespace",
    run: () => checkExportTo([".", "ns"], "ns", ["e"], false),
    want: ["e[1]", "duplicate"],
  },
  {
    name: "checkExportTo: * with others",
    run: () => checkExportTo(["*", "a"], "ns", ["e"], false),
    want: ["e", "public (*)"],
  },
  {
    name: "checkExportTo: ~ outside ServiceEntry",
    run: () => checkExportTo(["~"], "ns", ["e"], false),
    want: ["e[0]", "only allowed for a ServiceEntry"],
  },
  { name: "checkPercent: ok", run: () => checkPercent({ value: 0.5 }, ["p"]) },
  {
    name: "checkPercent: over 100",
    run: () => checkPercent({ value: 101 }, ["p"]),
    want: ["p.value", "neither 0 nor"],
  },
  {
    name: "checkPercent: too small",
    run: () => checkPercent({ value: 0.00001 }, ["p"]),
    want: ["p.value", "neither 0 nor"],
  },
  { name: "checkStringMatch: presence", run: () => checkStringMatch({}, ["m"], { empty: "presence" }) },
  {
    name: "checkStringMatch: two kinds",
    run: () => checkStringMatch({ exact: "a", prefix: "b" }, ["m"], { empty: "any" }),
    want: ["m", "only one of exact, prefix, regex"],
  },
  {
    name: "checkStringMatch: empty any",
    run: () => checkStringMatch({}, ["m"], { empty: "any" }),
    want: ["m", "matches any value"],
  },
  {
    name: "checkStringMatch: empty invalid",
    run: () => checkStringMatch({}, ["m"], { empty: "invalid" }),
    want: ["m", "one of exact, prefix, regex is required"],
  },
  {
    name: "checkStringMatch: empty prefix",
    run: () => checkStringMatch({ prefix: "" }, ["m"], { empty: "any" }),
    want: ["m.prefix", "must not be empty"],
  },
  {
    name: "checkStringMatch: empty uri prefix ok",
    run: () => checkStringMatch({ prefix: "" }, ["m"], { empty: "any", allowEmptyPrefix: true }),
  },
  {
    name: "checkStringMatch: bad regex",
    run: () => checkStringMatch({ regex: "a(?!b)" }, ["m"], { empty: "any" }),
    want: ["m.regex", "RE2"],
  },
  {
    name: "checkStringMatch: withoutHeaders *",
    run: () => checkStringMatch({ regex: "*" }, ["m"], { empty: "presence", starIsPresence: true }),
  },
];

for (const c of findingCases) {
  Deno.test(`networking_rules: ${c.name}`, () => {
    const got = c.run().map((f) => `${formatFieldPath(f.path)}: ${f.message}`);
    if (!c.want) assert.deepEqual(got, []);
    else {assert.ok(
        got.some((g) => g.startsWith(`${c.want![0]}: `) && g.includes(c.want![1])),
        got.join("\n"),
      );}
  });
}
