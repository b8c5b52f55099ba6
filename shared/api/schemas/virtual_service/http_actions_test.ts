import { type Case, fwd, http, testCases } from "./_test_support.ts";

/** VirtualService rules on route, redirect, directResponse, delegate and rewrite. */
const cases: Case[] = [
  // Route, redirect, directResponse, delegate
  {
    name: "conflict: needs an action",
    spec: http({ name: "r" }),
    want: { path: "spec.http[0]", message: "needs one of route, redirect" },
  },
  {
    name: "conflict: route and redirect",
    spec: fwd({ redirect: { uri: "/x" } }),
    want: { path: "spec.http[0].route", message: "both route and redirect" },
  },
  {
    name: "conflict: fault and redirect",
    spec: http({ redirect: { uri: "/x" }, fault: { abort: { httpStatus: 500 } } }),
    want: { path: "spec.http[0].fault", message: "both fault and redirect" },
  },
  {
    name: "conflict: rewrite and redirect",
    spec: http({ redirect: { uri: "/x" }, rewrite: { uri: "/y" } }),
    want: { path: "spec.http[0].rewrite", message: "both rewrite and redirect" },
  },
  {
    name: "conflict: directResponse and redirect",
    spec: http({ redirect: { uri: "/x" }, directResponse: { status: 200 } }),
    want: { path: "spec.http[0].directResponse", message: "both directResponse and redirect" },
  },
  {
    name: "conflict: route and directResponse",
    spec: fwd({ directResponse: { status: 200 } }),
    want: { path: "spec.http[0].route", message: "both route and directResponse" },
  },
  {
    name: "conflict: delegate and route",
    spec: fwd({ delegate: { name: "reviews" } }),
    want: { path: "spec.http[0].route", message: "a route with delegate must not set route" },
  },
  {
    name: "conflict: delegate and redirect",
    spec: http({ delegate: { name: "reviews" }, redirect: { uri: "/x" } }),
    want: { path: "spec.http[0].redirect", message: "a route with delegate must not set redirect" },
  },
  {
    name: "conflict: delegate inside a delegate",
    spec: { http: [{ delegate: { name: "other" } }] },
    want: { path: "spec.http[0].delegate", message: "cannot delegate again" },
  },
  {
    name: "conflict: delegate without name warns",
    spec: http({ delegate: { namespace: "ns" } }),
    want: { path: "spec.http[0].delegate.name", message: "delegates to nothing", severity: "warning" },
  },
  {
    name: "conflict: mirror and mirrors",
    spec: fwd({ mirror: { host: "shadow" }, mirrors: [{ destination: { host: "shadow2" } }] }),
    want: { path: "spec.http[0].mirrors", message: "both mirror and mirrors" },
  },
  // Redirect
  {
    name: "redirect: ok",
    spec: http({
      match: [{ uri: { exact: "/a" } }],
      redirect: { uri: "/b", authority: "x.com", redirectCode: 302 },
    }),
  },
  {
    name: "redirect: uri and prefixRewrite",
    spec: http({ redirect: { uri: "/a", prefixRewrite: "/b" } }),
    want: { path: "spec.http[0].redirect", message: "only one of uri or prefixRewrite" },
  },
  {
    name: "redirect: prefixRewrite needs prefix matches",
    spec: http({ match: [{ uri: { exact: "/a" } }], redirect: { prefixRewrite: "/b" } }),
    want: { path: "spec.http[0].redirect.prefixRewrite", message: "requires prefix uri matches" },
  },
  {
    name: "redirect: needs a target",
    spec: http({ redirect: {} }),
    want: { path: "spec.http[0].redirect", message: "at least one of uri" },
  },
  {
    name: "redirect: port and derivePort",
    spec: http({ redirect: { port: 8443, derivePort: "FROM_REQUEST_PORT" } }),
    want: { path: "spec.http[0].redirect.derivePort", message: "only one of port or derivePort" },
  },
  {
    name: "redirect: code must be 3xx",
    spec: http({ redirect: { uri: "/b", redirectCode: 200 } }),
    want: { path: "spec.http[0].redirect.redirectCode", message: "must be 3xx" },
  },
  {
    name: "redirect: scheme",
    spec: http({ redirect: { scheme: "ftp" } }),
    want: { path: "spec.http[0].redirect.scheme", message: 'must be "http" or "https"' },
  },
  // Direct response
  {
    name: "directResponse: ok",
    spec: http({ directResponse: { status: 503, body: { string: "unknown path" } } }),
  },
  {
    name: "directResponse: status range",
    spec: http({ directResponse: { status: 100 } }),
    want: { path: "spec.http[0].directResponse.status", message: "not in the range 200-599" },
  },
  {
    name: "directResponse: string or bytes",
    spec: http({ directResponse: { status: 200, body: { string: "a", bytes: "YQ==" } } }),
    want: { path: "spec.http[0].directResponse.body", message: "only one of string or bytes" },
  },
  {
    name: "directResponse: body over 1MB",
    spec: http({ directResponse: { status: 200, body: { string: "a".repeat(1024 * 1024 + 1) } } }),
    want: { path: "spec.http[0].directResponse.body", message: "smaller than 1MB" },
  },
  {
    name: "directResponse: body over 100KB warns",
    spec: http({ directResponse: { status: 200, body: { string: "a".repeat(100 * 1024 + 1) } } }),
    want: { path: "spec.http[0].directResponse.body", message: "over 100KB", severity: "warning" },
  },
  // Rewrite
  {
    name: "rewrite: regex ok",
    spec: fwd({ rewrite: { uriRegexRewrite: { match: "^/v1/(.*)", rewrite: "/v2/\\1" } } }),
  },
  {
    name: "rewrite: uri and uriRegexRewrite",
    spec: fwd({ rewrite: { uri: "/a", uriRegexRewrite: { match: "a", rewrite: "b" } } }),
    want: { path: "spec.http[0].rewrite", message: "only one of uri or uriRegexRewrite" },
  },
  {
    name: "rewrite: needs a target",
    spec: fwd({ rewrite: {} }),
    want: { path: "spec.http[0].rewrite", message: "at least one of uri" },
  },
  {
    name: "rewrite: regex needs both fields",
    spec: fwd({ rewrite: { uriRegexRewrite: { match: "^/a" } } }),
    want: { path: "spec.http[0].rewrite.uriRegexRewrite", message: "needs both match and rewrite" },
  },
  {
    name: "rewrite: regex syntax",
    spec: fwd({ rewrite: { uriRegexRewrite: { match: "(a", rewrite: "b" } } }),
    want: { path: "spec.http[0].rewrite.uriRegexRewrite.match", message: "invalid regex" },
  },
];

testCases(cases);
