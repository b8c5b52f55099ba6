import { type Case, fwd, http, testCases, to } from "./_test_support.ts";

/** VirtualService rules on header names and values. */
const cases: Case[] = [
  // Header manipulation
  {
    name: "headers: set host and Envoy variables ok",
    spec: fwd({ headers: { request: { set: { host: "a", "x-h": "%HOSTNAME% 100%%" } } } }),
  },
  {
    name: "headers: no pseudo headers on requests",
    spec: fwd({ headers: { request: { set: { ":path": "/x" } } } }),
    want: { path: 'spec.http[0].headers.request.set[":path"]', message: 'cannot have ":" prefix' },
  },
  {
    name: "headers: no Host on responses",
    spec: fwd({ headers: { response: { add: { Host: "a" } } } }),
    want: { path: "spec.http[0].headers.response.add.Host", message: "Host header" },
  },
  {
    name: "headers: cannot remove host",
    spec: fwd({ headers: { request: { remove: ["host"] } } }),
    want: { path: "spec.http[0].headers.request.remove[0]", message: "Host header" },
  },
  {
    name: "headers: empty name",
    spec: fwd({ headers: { response: { remove: [""] } } }),
    want: { path: "spec.http[0].headers.response.remove[0]", message: "cannot be empty" },
  },
  {
    name: "headers: un-escaped %",
    spec: fwd({ headers: { response: { set: { "x-h": "50%" } } } }),
    want: { path: "spec.http[0].headers.response.set.x-h", message: 'un-escaped "%"' },
  },
  {
    name: "headers: unterminated variable",
    spec: fwd({ headers: { response: { set: { "x-h": "%START_TIME" } } } }),
    want: { path: "spec.http[0].headers.response.set.x-h", message: "unterminated variable" },
  },
  {
    name: "headers: control characters",
    spec: fwd({ headers: { response: { set: { "x-h": "a\nb" } } } }),
    want: { path: "spec.http[0].headers.response.set.x-h", message: "control characters" },
  },
  {
    name: "headers: on a destination",
    spec: http({ route: [to("reviews", { headers: { response: { set: { ":status": "200" } } } })] }),
    want: {
      path: 'spec.http[0].route[0].headers.response.set[":status"]',
      message: 'cannot have ":" prefix',
    },
  },
  {
    name: "headers: authority set twice",
    spec: fwd({ rewrite: { authority: "a.com" }, headers: { request: { set: { Host: "b.com" } } } }),
    want: { path: "spec.http[0].headers.request.set.Host", message: "the authority is set twice" },
  },
];

testCases(cases);
