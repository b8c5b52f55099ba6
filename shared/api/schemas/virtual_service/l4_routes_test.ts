import { type Case, sni, testCases, tls, to } from "./_test_support.ts";

/** VirtualService rules on TLS and TCP routes. */
const cases: Case[] = [
  // TLS routes
  { name: "tls: SNI within hosts ok", spec: tls(sni("login.bookinfo.com")) },
  {
    name: "tls: needs a match",
    spec: tls({ match: [], route: [to("login")] }),
    want: { path: "spec.tls[0].match", message: "at least one match" },
  },
  {
    name: "tls: needs an SNI host",
    spec: tls(sni()),
    want: { path: "spec.tls[0].match[0].sniHosts", message: "at least one SNI host" },
  },
  {
    name: "tls: SNI must be within hosts",
    spec: tls(sni("login.example.com")),
    want: {
      path: "spec.tls[0].match[0].sniHosts[0]",
      message: "not within any of the VirtualService's hosts",
    },
  },
  {
    name: "tls: SNI IP warns",
    spec: tls(sni("10.0.0.1"), { hosts: ["10.0.0.1"] }),
    want: { path: "spec.tls[0].match[0].sniHosts[0]", message: "SNI spec", severity: "warning" },
  },
  {
    name: "tls: auto-passthrough SNI ok",
    spec: tls(sni("outbound_.80_._.e2e.foobar.mesh"), { hosts: ["outbound_.80_._.e2e.foobar.mesh"] }),
  },
  {
    name: "tls: destinationSubnets",
    spec: tls({
      match: [{ sniHosts: ["a.bookinfo.com"], destinationSubnets: ["10.0.0.0/40"] }],
      route: [to("a")],
    }),
    want: { path: "spec.tls[0].match[0].destinationSubnets[0]", message: "not a valid IP address or CIDR" },
  },
  {
    name: "tls: needs a route",
    spec: tls({ match: [{ sniHosts: ["a.bookinfo.com"] }] }),
    want: { path: "spec.tls[0]", message: "at least one route destination" },
  },
  // TCP routes
  {
    name: "tcp: ok",
    spec: { hosts: ["mongo"], tcp: [{ match: [{ port: 27017 }], route: [to("mongo", { weight: 1 })] }] },
  },
  {
    name: "tcp: needs a route",
    spec: { hosts: ["mongo"], tcp: [{ match: [{ port: 27017 }] }] },
    want: { path: "spec.tcp[0]", message: "at least one route destination" },
  },
  {
    name: "tcp: destinationSubnets",
    spec: { hosts: ["mongo"], tcp: [{ match: [{ destinationSubnets: ["mongo"] }], route: [to("mongo")] }] },
    want: { path: "spec.tcp[0].match[0].destinationSubnets[0]", message: "not a valid IP address or CIDR" },
  },
  {
    name: "tcp: sourceLabels",
    spec: { hosts: ["mongo"], tcp: [{ match: [{ sourceLabels: { "a b": "c" } }], route: [to("mongo")] }] },
    want: { path: 'spec.tcp[0].match[0].sourceLabels["a b"]', message: "invalid label key" },
  },
  {
    name: "tcp: weights",
    spec: { hosts: ["mongo"], tcp: [{ route: [to("a"), to("b")] }] },
    want: { path: "spec.tcp[0].route", message: "total destination weight is 0" },
  },
];

testCases(cases);
