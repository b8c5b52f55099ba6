import assert from "node:assert/strict";
import { assertFindingOrValid } from "./_test_support.ts";
import { parseAllDocuments } from "yaml";
import { type Finding, formatFieldPath, type Severity } from "../finding.ts";
import { validateResource } from "../validate_resource.ts";
import { virtualService } from "./virtual_service.ts";

/** One rule exercised: the spec, and the finding it must produce (none: it must produce no error). */
interface Case {
  name: string;
  spec: Record<string, unknown>;
  want?: { path: string; message: string; severity?: Severity };
}

const show = (f: Finding): string => `${f.severity} ${formatFieldPath(f.path)}: ${f.message}`;

type Obj = Record<string, unknown>;
const to = (host: string, extra: Obj = {}): Obj => ({ destination: { host }, ...extra });
/** A VirtualService for `reviews` in the mesh with one HTTP rule made of `rule`. */
const http = (rule: Obj, spec: Obj = {}): Obj => ({ hosts: ["reviews"], http: [rule], ...spec });
/** As {@link http}, with the rule forwarding to reviews. */
const fwd = (rule: Obj, spec: Obj = {}): Obj => http({ route: [to("reviews")], ...rule }, spec);
/** As {@link fwd}, with one match. */
const matching = (match: Obj, spec: Obj = {}): Obj => fwd({ match: [match] }, spec);
const atGateway = { gateways: ["istio-system/ingress"] };
const tls = (route: Obj, spec: Obj = {}): Obj => ({
  hosts: ["*.bookinfo.com"],
  ...atGateway,
  tls: [route],
  ...spec,
});
const sni = (...hosts: string[]): Obj => ({ match: [{ port: 443, sniHosts: hosts }], route: [to("login")] });

const cases: Case[] = [
  // Schema
  {
    name: "schema: unknown rule field",
    spec: fwd({ routes: [] }),
    want: { path: "spec.http[0].routes", message: "unknown field" },
  },
  {
    name: "schema: destination host is required",
    spec: http({ route: [{ destination: { subset: "v1" } }] }),
    want: { path: "spec.http[0].route[0].destination.host", message: "required" },
  },
  {
    name: "schema: destination port number is required",
    spec: http({ route: [to("reviews", { destination: { host: "reviews", port: {} } })] }),
    want: { path: "spec.http[0].route[0].destination.port.number", message: "required" },
  },
  {
    name: "schema: destination port range",
    spec: http({ route: [{ destination: { host: "reviews", port: { number: 0 } } }] }),
    want: { path: "spec.http[0].route[0].destination.port.number", message: "greater or equal to 1" },
  },
  {
    name: "schema: match port range",
    spec: matching({ port: 70000 }),
    want: { path: "spec.http[0].match[0].port", message: "less or equal to 65535" },
  },
  {
    name: "schema: directResponse status is required",
    spec: http({ directResponse: { body: { string: "x" } } }),
    want: { path: "spec.http[0].directResponse.status", message: "required" },
  },
  {
    name: "schema: derivePort enum",
    spec: http({ redirect: { derivePort: "FROM_HEADER" } }),
    want: { path: "spec.http[0].redirect.derivePort", message: "must be one of FROM_PROTOCOL_DEFAULT" },
  },
  {
    name: "schema: TLS route match is required",
    spec: tls({ route: [to("login")] }),
    want: { path: "spec.tls[0].match", message: "required" },
  },
  {
    name: "schema: TLS match sniHosts is required",
    spec: tls({ match: [{ port: 443 }], route: [to("login")] }),
    want: { path: "spec.tls[0].match[0].sniHosts", message: "required" },
  },
  // Hosts and delegates
  { name: "hosts: short name ok", spec: fwd({}) },
  { name: "hosts: IP ok", spec: fwd({}, { hosts: ["10.0.0.1"] }) },
  {
    name: "hosts: invalid",
    spec: fwd({}, { hosts: ["foo_bar.example.com"] }),
    want: { path: "spec.hosts[0]", message: 'label "foo_bar" invalid' },
  },
  {
    name: "hosts: * not for the mesh",
    spec: fwd({}, { hosts: ["*"] }),
    want: { path: "spec.hosts[0]", message: "not allowed for a VirtualService bound to the mesh" },
  },
  {
    name: "hosts: * not when bound to mesh and a gateway",
    spec: fwd({}, { hosts: ["*"], gateways: ["mesh", "ns/gw"] }),
    want: { path: "spec.hosts[0]", message: "bound to the mesh" },
  },
  { name: "hosts: * ok at a gateway", spec: fwd({}, { hosts: ["*"], ...atGateway }) },
  {
    name: "hosts: overlapping",
    spec: fwd({}, { hosts: ["*.foo.com", "a.foo.com"] }),
    want: { path: "spec.hosts[1]", message: "duplicate hosts in virtual service: *.foo.com & a.foo.com" },
  },
  { name: "delegate: no hosts ok", spec: fwd({}, { hosts: undefined }) },
  {
    name: "delegate: no gateways",
    spec: fwd({}, { hosts: [], ...atGateway }),
    want: { path: "spec.gateways", message: "delegate VirtualService (no hosts) must not have gateways" },
  },
  {
    name: "delegate: no tls routes",
    spec: { tls: [sni("a.com")] },
    want: { path: "spec.tls", message: "cannot have tls routes" },
  },
  {
    name: "delegate: no tcp routes",
    spec: { tcp: [{ route: [to("db")] }] },
    want: { path: "spec.tcp", message: "cannot have tcp routes" },
  },
  {
    name: "rules: at least one of http, tls, tcp",
    spec: { hosts: ["reviews"] },
    want: { path: "spec", message: "at least one of http, tls, tcp" },
  },
  // Gateway names
  { name: "gateways: namespace/name and mesh ok", spec: fwd({}, { gateways: ["ns/gw", "mesh"] }) },
  {
    name: "gateways: legacy name warns",
    spec: fwd({}, { gateways: ["gw.ns"] }),
    want: {
      path: "spec.gateways[0]",
      message: 'prefer the namespace/name form: "ns/gw"',
      severity: "warning",
    },
  },
  {
    name: "gateways: invalid namespace",
    spec: fwd({}, { gateways: ["Bad_NS/gw"] }),
    want: { path: "spec.gateways[0]", message: 'invalid namespace "Bad_NS"' },
  },
  {
    name: "gateways: invalid name",
    spec: fwd({}, { gateways: ["ns/g_w"] }),
    want: { path: "spec.gateways[0]", message: 'invalid gateway name "g_w"' },
  },
  {
    name: "gateways: empty part",
    spec: fwd({}, { gateways: ["ns/"] }),
    want: { path: "spec.gateways[0]", message: "cannot be empty" },
  },
  {
    name: "gateways: invalid legacy name",
    spec: fwd({}, { gateways: ["g_w"] }),
    want: { path: "spec.gateways[0]", message: 'label "g_w" invalid' },
  },
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
  // CORS
  {
    name: "cors: ok",
    spec: fwd({
      corsPolicy: {
        allowOrigins: [{ exact: "https://example.com" }],
        allowMethods: ["GET", "POST"],
        maxAge: "24h",
      },
    }),
  },
  {
    name: "cors: empty origin match",
    spec: fwd({ corsPolicy: { allowOrigins: [{}] } }),
    want: {
      path: "spec.http[0].corsPolicy.allowOrigins[0]",
      message: "one of exact, prefix, regex is required",
    },
  },
  {
    name: "cors: empty origin",
    spec: fwd({ corsPolicy: { allowOrigins: [{ exact: "" }] } }),
    want: { path: "spec.http[0].corsPolicy.allowOrigins[0].exact", message: "must not be empty" },
  },
  {
    name: "cors: method",
    spec: fwd({ corsPolicy: { allowMethods: ["get"] } }),
    want: {
      path: "spec.http[0].corsPolicy.allowMethods[0]",
      message: '"get" is not a supported HTTP method',
    },
  },
  {
    name: "cors: header name",
    spec: fwd({ corsPolicy: { exposeHeaders: ["x foo"] } }),
    want: { path: "spec.http[0].corsPolicy.exposeHeaders[0]", message: "not a valid header name" },
  },
  {
    name: "cors: maxAge whole seconds",
    spec: fwd({ corsPolicy: { maxAge: "1.5s" } }),
    want: { path: "spec.http[0].corsPolicy.maxAge", message: "whole seconds" },
  },
  {
    name: "cors: allowOrigin is deprecated",
    spec: fwd({ corsPolicy: { allowOrigin: ["*"] } }),
    want: { path: "spec.http[0].corsPolicy.allowOrigin", message: "deprecated", severity: "warning" },
  },
  // Fault injection
  {
    name: "fault: delay ok",
    spec: fwd({ fault: { delay: { percentage: { value: 0.1 }, fixedDelay: "5s" } } }),
  },
  {
    name: "fault: needs abort or delay",
    spec: fwd({ fault: {} }),
    want: { path: "spec.http[0].fault", message: "abort and/or a delay" },
  },
  {
    name: "fault: abort HTTP status",
    spec: fwd({ fault: { abort: { httpStatus: 700 } } }),
    want: { path: "spec.http[0].fault.abort.httpStatus", message: "not in the range 200-599" },
  },
  {
    name: "fault: abort gRPC status",
    spec: fwd({ fault: { abort: { grpcStatus: "GONE" } } }),
    want: { path: "spec.http[0].fault.abort.grpcStatus", message: 'gRPC status "GONE" is not supported' },
  },
  {
    name: "fault: abort http2Error",
    spec: fwd({ fault: { abort: { http2Error: "x" } } }),
    want: { path: "spec.http[0].fault.abort.http2Error", message: "not supported" },
  },
  {
    name: "fault: abort one type",
    spec: fwd({ fault: { abort: { httpStatus: 500, grpcStatus: "UNAVAILABLE" } } }),
    want: { path: "spec.http[0].fault.abort", message: "only one of httpStatus, grpcStatus, http2Error" },
  },
  {
    name: "fault: abort without type warns",
    spec: fwd({ fault: { abort: { percentage: { value: 10 } } } }),
    want: { path: "spec.http[0].fault.abort", message: "does nothing", severity: "warning" },
  },
  {
    name: "fault: abort percentage",
    spec: fwd({ fault: { abort: { httpStatus: 500, percentage: { value: 101 } } } }),
    want: { path: "spec.http[0].fault.abort.percentage.value", message: "neither 0 nor" },
  },
  {
    name: "fault: delay duration",
    spec: fwd({ fault: { delay: { fixedDelay: "5" } } }),
    want: { path: "spec.http[0].fault.delay.fixedDelay", message: "is not a duration" },
  },
  {
    name: "fault: exponentialDelay unsupported",
    spec: fwd({ fault: { delay: { exponentialDelay: "1s" } } }),
    want: { path: "spec.http[0].fault.delay.exponentialDelay", message: "not supported" },
  },
  {
    name: "fault: delay one type",
    spec: fwd({ fault: { delay: { fixedDelay: "1s", exponentialDelay: "1s" } } }),
    want: { path: "spec.http[0].fault.delay", message: "only one of fixedDelay, exponentialDelay" },
  },
  {
    name: "fault: deprecated delay percent",
    spec: fwd({ fault: { delay: { fixedDelay: "1s", percent: 150 } } }),
    want: { path: "spec.http[0].fault.delay.percent", message: "not in the range 0..100" },
  },
  // Mirroring
  {
    name: "mirror: ok",
    spec: fwd({ mirror: { host: "shadow", subset: "v2" }, mirrorPercentage: { value: 100 } }),
  },
  {
    name: "mirror: mirrorPercent range",
    spec: fwd({ mirror: { host: "shadow" }, mirrorPercent: 150 }),
    want: { path: "spec.http[0].mirrorPercent", message: "at most 100" },
  },
  {
    name: "mirror: mirror_percent is deprecated",
    spec: fwd({ mirror: { host: "shadow" }, mirror_percent: 50 }),
    want: { path: "spec.http[0].mirror_percent", message: "deprecated", severity: "warning" },
  },
  {
    name: "mirror: mirrorPercentage range",
    spec: fwd({ mirror: { host: "shadow" }, mirrorPercentage: { value: 101 } }),
    want: { path: "spec.http[0].mirrorPercentage.value", message: "within 0..100" },
  },
  {
    name: "mirror: host",
    spec: fwd({ mirror: { host: "*" } }),
    want: { path: "spec.http[0].mirror.host", message: 'cannot be "*"' },
  },
  {
    name: "mirrors: percentage",
    spec: fwd({ mirrors: [{ destination: { host: "shadow" }, percentage: { value: 200 } }] }),
    want: { path: "spec.http[0].mirrors[0].percentage.value", message: "within 0..100" },
  },
  {
    name: "mirrors: destination",
    spec: fwd({ mirrors: [{ destination: { host: "shadow", subset: "V_2" } }] }),
    want: { path: "spec.http[0].mirrors[0].destination.subset", message: "invalid subset name" },
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
  // Retries, timeouts
  {
    name: "retries: ok",
    spec: fwd({
      retries: { attempts: 3, perTryTimeout: "2s", retryOn: "gateway-error,connect-failure,503" },
    }),
  },
  {
    name: "retries: negative attempts",
    spec: fwd({ retries: { attempts: -1 } }),
    want: { path: "spec.http[0].retries.attempts", message: "cannot be negative" },
  },
  {
    name: "retries: settings without attempts",
    spec: fwd({ retries: { retryOn: "5xx" } }),
    want: { path: "spec.http[0].retries", message: "no effect with attempts 0" },
  },
  {
    name: "retries: perTryTimeout",
    spec: fwd({ retries: { attempts: 2, perTryTimeout: "2" } }),
    want: { path: "spec.http[0].retries.perTryTimeout", message: "is not a duration" },
  },
  {
    name: "retries: backoff at least 1ms",
    spec: fwd({ retries: { attempts: 2, backoff: "0.1ms" } }),
    want: { path: "spec.http[0].retries.backoff", message: "at least 1ms" },
  },
  {
    name: "retries: retryOn policy",
    spec: fwd({ retries: { attempts: 2, retryOn: "5xx, reset" } }),
    want: { path: "spec.http[0].retries.retryOn", message: '" reset" is not a valid retryOn policy' },
  },
  { name: "timeout: Go-style ok", spec: fwd({ timeout: "1m30s" }) },
  { name: "timeout: fractional seconds ok", spec: fwd({ timeout: "0.5s" }) },
  {
    name: "timeout: needs a unit",
    spec: fwd({ timeout: "10" }),
    want: { path: "spec.http[0].timeout", message: '"10" is not a duration' },
  },
  {
    name: "timeout: at least 1ms",
    spec: fwd({ timeout: "0s" }),
    want: { path: "spec.http[0].timeout", message: "at least 1ms" },
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
  // Destinations
  {
    name: "destinations: weights ok",
    spec: http({ route: [to("reviews", { weight: 75 }), to("reviews", { weight: 25 })] }),
  },
  {
    name: "destinations: negative weight",
    spec: http({ route: [to("reviews", { weight: -1 })] }),
    want: { path: "spec.http[0].route[0].weight", message: "must not be negative" },
  },
  {
    name: "destinations: several need weights",
    spec: http({ route: [to("reviews"), to("ratings")] }),
    want: { path: "spec.http[0].route", message: "total destination weight is 0" },
  },
  {
    name: "destinations: host * not allowed",
    spec: http({ route: [to("*")] }),
    want: { path: "spec.http[0].route[0].destination.host", message: 'cannot be "*"' },
  },
  {
    name: "destinations: invalid host",
    spec: http({ route: [to("reviews..svc")] }),
    want: { path: "spec.http[0].route[0].destination.host", message: 'label "" invalid' },
  },
  {
    name: "destinations: subset name",
    spec: http({ route: [{ destination: { host: "reviews", subset: "V_1" } }] }),
    want: { path: "spec.http[0].route[0].destination.subset", message: "invalid subset name" },
  },
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
  // exportTo
  {
    name: "exportTo: ~ not for a VirtualService",
    spec: fwd({}, { exportTo: ["~"] }),
    want: { path: "spec.exportTo[0]", message: "only allowed for a ServiceEntry" },
  },
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

for (const c of cases) {
  Deno.test(`VirtualService: ${c.name}`, () => {
    const findings = validateResource(virtualService, {
      apiVersion: "networking.mesh.io/v1",
      kind: "VirtualService",
      metadata: { name: "vs", namespace: "ns" },
      spec: JSON.parse(JSON.stringify(c.spec)),
    });
    assertFindingOrValid(findings, c.want);
  });
}

/** The VirtualService of Istio's authentication task, and examples from istio.io's reference. */
const ISTIO_EXAMPLES = [
  new URL("../../../tests/fixtures/istio/authn-policy/06_httpbin_gateway_foo.yaml", import.meta.url),
  `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews-route
spec:
  hosts:
  - reviews.prod.svc.cluster.local
  http:
  - name: "reviews-v2-routes"
    match:
    - uri:
        prefix: "/wpcatalog"
    - uri:
        prefix: "/consumercatalog"
    rewrite:
      uri: "/newcatalog"
    route:
    - destination:
        host: reviews.prod.svc.cluster.local
        subset: v2
  - name: "reviews-v1-route"
    route:
    - destination:
        host: reviews.prod.svc.cluster.local
        subset: v1
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews-route-weights
spec:
  hosts:
  - reviews.prod.svc.cluster.local
  http:
  - route:
    - destination:
        host: reviews.prod.svc.cluster.local
        subset: v2
      weight: 25
    - destination:
        host: reviews.prod.svc.cluster.local
        subset: v1
      weight: 75
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: ratings-route
spec:
  hosts:
  - ratings.prod.svc.cluster.local
  http:
  - match:
    - headers:
        end-user:
          exact: jason
      uri:
        prefix: "/ratings/v2/"
      ignoreUriCase: true
    route:
    - destination:
        host: ratings.prod.svc.cluster.local
    fault:
      delay:
        percentage:
          value: 0.1
        fixedDelay: 5s
    retries:
      attempts: 3
      perTryTimeout: 2s
      retryOn: gateway-error,connect-failure,refused-stream
    timeout: 10s
    corsPolicy:
      allowOrigins:
      - exact: https://example.com
      allowMethods:
      - POST
      - GET
      allowCredentials: false
      allowHeaders:
      - X-Foo-Bar
      maxAge: "24h"
    headers:
      request:
        set:
          test: "true"
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: ratings-redirect
spec:
  hosts:
  - ratings.prod.svc.cluster.local
  http:
  - match:
    - uri:
        exact: /v1/getProductRatings
    redirect:
      uri: /v1/bookRatings
      authority: newratings.default.svc.cluster.local
  - match:
    - uri:
        prefix: /unknown
    directResponse:
      status: 503
      body:
        string: "unknown path"
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: httpbin-mirror
spec:
  hosts:
  - httpbin
  http:
  - route:
    - destination:
        host: httpbin
        subset: v1
      weight: 100
    mirror:
      host: httpbin
      subset: v2
    mirrorPercentage:
      value: 100.0
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: bookinfo-sni
spec:
  hosts:
  - "*.bookinfo.com"
  gateways:
  - mygateway
  tls:
  - match:
    - port: 443
      sniHosts:
      - login.bookinfo.com
    route:
    - destination:
        host: login.prod.svc.cluster.local
  - match:
    - port: 443
      sniHosts:
      - reviews.bookinfo.com
    route:
    - destination:
        host: reviews.prod.svc.cluster.local
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: bookinfo-mongo
spec:
  hosts:
  - mongo.prod.svc.cluster.local
  tcp:
  - match:
    - port: 27017
    route:
    - destination:
        host: mongo.backup.svc.cluster.local
        port:
          number: 5555
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: bookinfo
spec:
  hosts:
  - "bookinfo.com"
  gateways:
  - mygateway
  http:
  - match:
    - uri:
        prefix: "/productpage"
    delegate:
       name: productpage
       namespace: nsa
  - match:
    - uri:
        prefix: "/reviews"
    delegate:
        name: reviews
        namespace: nsb
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: productpage
  namespace: nsa
spec:
  http:
  - match:
     - uri:
        prefix: "/productpage/v1/"
    route:
    - destination:
        host: productpage-v1.nsa.svc.cluster.local
  - route:
    - destination:
        host: productpage.nsa.svc.cluster.local
`,
];

for (const source of ISTIO_EXAMPLES) {
  const text = typeof source === "string" ? source : Deno.readTextFileSync(source);
  for (const doc of parseAllDocuments(text)) {
    const resource = doc.toJS();
    if (resource.kind !== "VirtualService") continue;
    Deno.test(`VirtualService: Istio example ${resource.metadata.name} is clean`, () => {
      assert.deepEqual(validateResource(virtualService, resource).map(show), []);
    });
  }
}
