import { type Case, testCases, to } from "./_test_support.ts";

/** VirtualService rules on rules that are never used. */
const cases: Case[] = [
  // Unreachable rules
  {
    name: "unreachable: two catch-all rules",
    spec: { hosts: ["reviews"], http: [{ route: [to("a")] }, { route: [to("b")] }] },
    want: { path: "spec.http[1]", message: "only the last rule can have no matches", severity: "warning" },
  },
  {
    name: "unreachable: rule after a catch-all",
    spec: {
      hosts: ["reviews"],
      http: [{ name: "all", route: [to("a")] }, { match: [{ uri: { prefix: "/" } }], route: [to("b")] }],
    },
    want: { path: "spec.http[1]", message: 'rule "all" before it has no matches', severity: "warning" },
  },
  {
    name: "unreachable: duplicate match",
    spec: {
      hosts: ["reviews"],
      http: [
        { match: [{ name: "a", uri: { prefix: "/x" } }], route: [to("a")] },
        { match: [{ name: "b", uri: { prefix: "/x" } }], route: [to("b")] },
      ],
    },
    want: { path: "spec.http[1].match[0]", message: "rule #0 has the same match", severity: "warning" },
  },
];

testCases(cases);
