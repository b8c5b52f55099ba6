import { atGateway, type Case, matching, testCases } from "./_test_support.ts";

/** VirtualService rules on HTTP match conditions. */
const cases: Case[] = [
  // HTTP matches
  {
    name: "match: StringMatch with two kinds",
    spec: matching({ uri: { exact: "/a", prefix: "/b" } }),
    want: { path: "spec.http[0].match[0].uri", message: "only one of exact, prefix, regex may be set" },
  },
  {
    name: "match: empty StringMatch warns",
    spec: matching({ method: {} }),
    want: { path: "spec.http[0].match[0].method", message: "matches any value", severity: "warning" },
  },
  { name: "match: empty uri prefix ok", spec: matching({ uri: { prefix: "" } }) },
  {
    name: "match: empty method prefix",
    spec: matching({ method: { prefix: "" } }),
    want: { path: "spec.http[0].match[0].method.prefix", message: "must not be empty" },
  },
  {
    name: "match: invalid regex",
    spec: matching({ uri: { regex: "/api/(v1" } }),
    want: { path: "spec.http[0].match[0].uri.regex", message: "invalid regex" },
  },
  {
    name: "match: empty regex",
    spec: matching({ authority: { regex: "" } }),
    want: { path: "spec.http[0].match[0].authority.regex", message: "regex must not be empty" },
  },
  { name: "match: header presence ok", spec: matching({ headers: { "x-user": {} } }) },
  {
    name: "match: invalid header name",
    spec: matching({ headers: { "x user": { exact: "a" } } }),
    want: { path: 'spec.http[0].match[0].headers["x user"]', message: "not a valid header name" },
  },
  {
    name: "match: withoutHeaders regex * ok",
    spec: matching({ withoutHeaders: { "x-debug": { regex: "*" } } }),
  },
  {
    name: "match: JWT claim needs a gateway",
    spec: matching({ headers: { "@request.auth.claims.group": { exact: "admin" } } }),
    want: {
      path: 'spec.http[0].match[0].headers["@request.auth.claims.group"]',
      message: "only supported at gateways",
    },
  },
  {
    name: "match: JWT claim at a gateway ok",
    spec: matching({ headers: { "@request.auth.claims.group": { exact: "admin" } } }, atGateway),
  },
  {
    name: "match: queryParams regex",
    spec: matching({ queryParams: { v: { regex: "a(?=b)" } } }),
    want: { path: "spec.http[0].match[0].queryParams.v.regex", message: "look-around" },
  },
  {
    name: "match: sourceLabels",
    spec: matching({ sourceLabels: { app: "a b" } }),
    want: { path: "spec.http[0].match[0].sourceLabels.app", message: "invalid label value" },
  },
  {
    name: "match: sourceNamespace",
    spec: matching({ sourceNamespace: "Bad_NS" }),
    want: { path: "spec.http[0].match[0].sourceNamespace", message: 'invalid namespace "Bad_NS"' },
  },
  {
    name: "match: gateways",
    spec: matching({ gateways: ["ns/g_w"] }),
    want: { path: "spec.http[0].match[0].gateways[0]", message: "invalid gateway name" },
  },
];

testCases(cases);
