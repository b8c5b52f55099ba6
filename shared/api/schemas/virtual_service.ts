/**
 * VirtualService (networking.mesh.io/v1): routing rules for the traffic sent to a set of hosts,
 * in the mesh or at a gateway: matches, destinations and weights, redirects, rewrites, retries,
 * timeouts, fault injection, mirroring and CORS. Fields are Istio's networking/v1 VirtualService
 * (istio.io/latest/docs/reference/config/networking/virtual-service); rules are Istio's
 * ValidateVirtualService and the functions it calls (virtualservice.go, validation.go).
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding, warning } from "../finding.ts";
import { closed, ResourceEnvelope, StringEnum, StringList } from "./common.ts";
import { defineKind } from "./kind_definition.ts";
import {
  asArray,
  asNumber,
  asObject,
  asString,
  checkExportTo,
  checkLabels,
  checkPercent,
  checkRegex,
  checkStringMatch,
  entriesOf,
  fqdnProblem,
  hostsOverlap,
  hostSubsetOf,
  isDns1123Label,
  isSet,
  namespaceOf,
  type Obj,
  wildcardDomainProblem,
} from "./networking_rules.ts";
import { isIp, isIpOrCidr } from "./ip.ts";
import { checkDuration } from "./duration.ts";

/** The reserved gateway name that means "the sidecars of the mesh". */
export const MESH_GATEWAY = "mesh";

// ---------------------------------------------------------------------------------------------
// Schema

/** networking.v1.StringMatch: one of exact, prefix, regex (RE2). */
export const StringMatch = Type.Object({
  exact: Type.Optional(Type.String({ description: "The value equals this" })),
  prefix: Type.Optional(Type.String({ description: "The value starts with this" })),
  regex: Type.Optional(Type.String({ description: "The value matches this RE2 regular expression" })),
}, {
  ...closed,
  title: "StringMatch",
  description: "A case-sensitive string condition: one of exact, prefix, regex",
});

const Percent = Type.Object({
  value: Type.Optional(Type.Number({ description: "Percentage, 0-100, fractions allowed" })),
}, { ...closed, title: "Percent", description: "Share of the requests, as a percentage" });

const Uint32 = (description: string) => Type.Integer({ minimum: 0, maximum: 4294967295, description });
const Int32 = (description: string) =>
  Type.Integer({ minimum: -2147483648, maximum: 2147483647, description });
const MatchPort = Type.Integer({
  minimum: 0,
  maximum: 65535,
  description: "Port the traffic is addressed to; 0: any",
});
const SourceLabels = Type.Record(Type.String(), Type.String(), {
  description: "Labels the source workload must carry",
});
const MatchGateways = StringList("Gateways (namespace/name, or mesh) this match is restricted to");

const PortSelector = Type.Object({
  number: Type.Integer({ minimum: 1, maximum: 65535, description: "Port number, 1-65535" }),
}, { ...closed, title: "PortSelector", description: "A port of the destination service" });

/** networking.v1.Destination: a service (and subset, port) traffic is sent to. */
export const Destination = Type.Object({
  host: Type.String({ description: "Service name from the registry; short names resolve in this namespace" }),
  subset: Type.Optional(Type.String({ description: "Subset defined by a DestinationRule" })),
  port: Type.Optional(PortSelector),
}, {
  ...closed,
  title: "Destination",
  description: "A service, and optionally its subset and port, traffic is sent to",
});

const HeaderOperations = Type.Object({
  set: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "Headers to overwrite" })),
  add: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "Headers to append to" })),
  remove: Type.Optional(StringList("Headers to remove")),
}, { ...closed, title: "HeaderOperations", description: "Header changes; values may use Envoy %VARIABLES%" });

const Headers = Type.Object({
  request: Type.Optional(HeaderOperations),
  response: Type.Optional(HeaderOperations),
}, { ...closed, title: "Headers", description: "Changes to request and response headers" });

const HTTPRouteDestination = Type.Object({
  destination: Destination,
  weight: Type.Optional(Int32("Relative share of the traffic; required when there are several destinations")),
  headers: Type.Optional(Headers),
}, { ...closed, title: "HTTPRouteDestination", description: "A weighted destination of an HTTP route" });

const RouteDestination = Type.Object({
  destination: Destination,
  weight: Type.Optional(Int32("Relative share of the traffic; required when there are several destinations")),
}, { ...closed, title: "RouteDestination", description: "A weighted destination of a TLS or TCP route" });

const HTTPMatchRequest = Type.Object({
  name: Type.Optional(Type.String({ description: "Name, appended to the route's name in logs" })),
  uri: Type.Optional(StringMatch),
  scheme: Type.Optional(StringMatch),
  method: Type.Optional(StringMatch),
  authority: Type.Optional(StringMatch),
  headers: Type.Optional(Type.Record(Type.String(), StringMatch, {
    description: "Lower-case header names; {} matches presence; @request.auth.claims.x matches JWT claims",
  })),
  port: Type.Optional(MatchPort),
  sourceLabels: Type.Optional(SourceLabels),
  gateways: Type.Optional(MatchGateways),
  queryParams: Type.Optional(Type.Record(Type.String(), StringMatch, { description: "Query parameters" })),
  ignoreUriCase: Type.Optional(Type.Boolean({ description: "Match uri case-insensitively" })),
  withoutHeaders: Type.Optional(Type.Record(Type.String(), StringMatch, {
    description: "Headers that must not match; regex * means must be absent",
  })),
  sourceNamespace: Type.Optional(Type.String({ description: "Namespace of the source workload" })),
  statPrefix: Type.Optional(Type.String({ description: "Prefix for the route's statistics" })),
}, { ...closed, title: "HTTPMatchRequest", description: "Conditions, all of which a request must meet" });

const HTTPRedirect = Type.Object({
  uri: Type.Optional(Type.String({ description: "Replaces the whole path" })),
  authority: Type.Optional(Type.String({ description: "Replaces the authority (host)" })),
  port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535, description: "Replaces the port" })),
  derivePort: Type.Optional(
    StringEnum(["FROM_PROTOCOL_DEFAULT", "FROM_REQUEST_PORT"], "How to set the port"),
  ),
  scheme: Type.Optional(Type.String({ description: "http or https" })),
  redirectCode: Type.Optional(Uint32("Status code, 3xx; default 301")),
  prefixRewrite: Type.Optional(Type.String({ description: "Replaces the matched uri prefix" })),
}, { ...closed, title: "HTTPRedirect", description: "Answer with a redirect instead of forwarding" });

const HTTPBody = Type.Object({
  string: Type.Optional(Type.String({ description: "Body as text" })),
  bytes: Type.Optional(Type.String({ description: "Body as base64" })),
}, { ...closed, title: "HTTPBody", description: "One of string, bytes" });

const HTTPDirectResponse = Type.Object({
  status: Uint32("Status code, 200-599"),
  body: Type.Optional(HTTPBody),
}, { ...closed, title: "HTTPDirectResponse", description: "Answer directly instead of forwarding" });

const Delegate = Type.Object({
  name: Type.Optional(Type.String({ description: "Name of the delegate VirtualService" })),
  namespace: Type.Optional(Type.String({ description: "Its namespace; default: this one" })),
}, {
  ...closed,
  title: "Delegate",
  description: "A VirtualService (without hosts) that holds this route's rules",
});

const RegexRewrite = Type.Object({
  match: Type.Optional(Type.String({ description: "RE2 regular expression" })),
  rewrite: Type.Optional(Type.String({ description: "Replacement; \\1 refers to capture groups" })),
}, { ...closed, title: "RegexRewrite", description: "Regex-based uri rewrite" });

const HTTPRewrite = Type.Object({
  uri: Type.Optional(Type.String({ description: "Replaces the matched uri (prefix, or whole path)" })),
  authority: Type.Optional(Type.String({ description: "Replaces the Host/:authority header" })),
  uriRegexRewrite: Type.Optional(RegexRewrite),
}, { ...closed, title: "HTTPRewrite", description: "Rewrites before forwarding" });

const HTTPRetry = Type.Object({
  attempts: Type.Optional(Int32("Number of retries; 0 disables retries")),
  perTryTimeout: Type.Optional(Type.String({ description: "Timeout per attempt, e.g. 2s; at least 1ms" })),
  retryOn: Type.Optional(
    Type.String({ description: "Comma-separated Envoy retry conditions or status codes" }),
  ),
  retryRemoteLocalities: Type.Optional(Type.Boolean({ description: "Retry in other localities" })),
  retryIgnorePreviousHosts: Type.Optional(
    Type.Boolean({ description: "Retry on other hosts; default true" }),
  ),
  backoff: Type.Optional(Type.String({ description: "Base interval between retries; default 25ms" })),
}, { ...closed, title: "HTTPRetry", description: "Retry policy" });

const HTTPFaultInjectionDelay = Type.Object({
  fixedDelay: Type.Optional(Type.String({ description: "Delay, e.g. 5s; at least 1ms" })),
  exponentialDelay: Type.Optional(Type.String({ description: "Not supported" })),
  percentage: Type.Optional(Percent),
  percent: Type.Optional(Int32("Deprecated: use percentage")),
}, { ...closed, title: "HTTPFaultInjectionDelay", description: "One of fixedDelay, exponentialDelay" });

const HTTPFaultInjectionAbort = Type.Object({
  httpStatus: Type.Optional(Int32("HTTP status to answer, 200-599")),
  grpcStatus: Type.Optional(Type.String({ description: "gRPC status name, e.g. UNAVAILABLE" })),
  http2Error: Type.Optional(Type.String({ description: "Not supported" })),
  percentage: Type.Optional(Percent),
}, { ...closed, title: "HTTPFaultInjectionAbort", description: "One of httpStatus, grpcStatus, http2Error" });

const HTTPFaultInjection = Type.Object({
  delay: Type.Optional(HTTPFaultInjectionDelay),
  abort: Type.Optional(HTTPFaultInjectionAbort),
}, { ...closed, title: "HTTPFaultInjection", description: "Faults injected into matching requests" });

const HTTPMirrorPolicy = Type.Object({
  destination: Destination,
  percentage: Type.Optional(Percent),
}, { ...closed, title: "HTTPMirrorPolicy", description: "A destination requests are copied to" });

const CorsPolicy = Type.Object({
  allowOrigin: Type.Optional(StringList("Deprecated: use allowOrigins")),
  allowOrigins: Type.Optional(Type.Array(StringMatch, { description: "Origins allowed" })),
  allowMethods: Type.Optional(StringList("Methods allowed (GET, POST, ..., or *)")),
  allowHeaders: Type.Optional(StringList("Request headers allowed")),
  exposeHeaders: Type.Optional(StringList("Response headers the browser may read")),
  maxAge: Type.Optional(Type.String({ description: "How long preflight results are cached, whole seconds" })),
  allowCredentials: Type.Optional(Type.Boolean({ description: "Whether credentials may be sent" })),
  unmatchedPreflights: Type.Optional(
    StringEnum(["UNSPECIFIED", "FORWARD", "IGNORE"], "Preflights with no match"),
  ),
}, { ...closed, title: "CorsPolicy", description: "Cross-origin resource sharing" });

const HTTPRoute = Type.Object({
  name: Type.Optional(Type.String({ description: "Name, for logs and statistics" })),
  match: Type.Optional(
    Type.Array(HTTPMatchRequest, { description: "Any one must match; none: all requests" }),
  ),
  route: Type.Optional(Type.Array(HTTPRouteDestination, { description: "Weighted destinations" })),
  redirect: Type.Optional(HTTPRedirect),
  directResponse: Type.Optional(HTTPDirectResponse),
  delegate: Type.Optional(Delegate),
  rewrite: Type.Optional(HTTPRewrite),
  timeout: Type.Optional(Type.String({ description: "Request timeout, e.g. 10s; at least 1ms" })),
  retries: Type.Optional(HTTPRetry),
  fault: Type.Optional(HTTPFaultInjection),
  mirror: Type.Optional(Destination),
  mirrors: Type.Optional(
    Type.Array(HTTPMirrorPolicy, { description: "Destinations requests are copied to" }),
  ),
  mirrorPercent: Type.Optional(Uint32("Deprecated: use mirrorPercentage")),
  mirror_percent: Type.Optional(Uint32("Deprecated: use mirrorPercentage")),
  mirrorPercentage: Type.Optional(Percent),
  corsPolicy: Type.Optional(CorsPolicy),
  headers: Type.Optional(Headers),
}, { ...closed, title: "HTTPRoute", description: "An HTTP routing rule; the first rule that matches wins" });

const TLSMatchAttributes = Type.Object({
  sniHosts: StringList("SNI names; each must be within the VirtualService's hosts"),
  destinationSubnets: Type.Optional(StringList("Destination IPs or CIDR blocks")),
  port: Type.Optional(MatchPort),
  sourceLabels: Type.Optional(SourceLabels),
  gateways: Type.Optional(MatchGateways),
  sourceNamespace: Type.Optional(Type.String({ description: "Namespace of the source workload" })),
}, { ...closed, title: "TLSMatchAttributes", description: "Conditions on a TLS connection" });

const L4MatchAttributes = Type.Object({
  destinationSubnets: Type.Optional(StringList("Destination IPs or CIDR blocks")),
  port: Type.Optional(MatchPort),
  sourceSubnet: Type.Optional(Type.String({ description: "Source IP or CIDR block" })),
  sourceLabels: Type.Optional(SourceLabels),
  gateways: Type.Optional(MatchGateways),
  sourceNamespace: Type.Optional(Type.String({ description: "Namespace of the source workload" })),
}, { ...closed, title: "L4MatchAttributes", description: "Conditions on a TCP connection" });

const TLSRoute = Type.Object({
  match: Type.Array(TLSMatchAttributes, { description: "Any one must match" }),
  route: Type.Optional(Type.Array(RouteDestination, { description: "Weighted destinations" })),
}, { ...closed, title: "TLSRoute", description: "A rule for TLS or HTTPS traffic, routed by SNI" });

const TCPRoute = Type.Object({
  match: Type.Optional(Type.Array(L4MatchAttributes, { description: "Any one must match; none: all" })),
  route: Type.Optional(Type.Array(RouteDestination, { description: "Weighted destinations" })),
}, { ...closed, title: "TCPRoute", description: "A rule for opaque TCP traffic" });

const VirtualServiceSpec = Type.Object({
  hosts: Type.Optional(StringList("Hosts the rules apply to; none: a delegate VirtualService")),
  gateways: Type.Optional(StringList("Gateways (namespace/name) and/or mesh; default: mesh")),
  http: Type.Optional(Type.Array(HTTPRoute, { description: "HTTP rules, in order" })),
  tls: Type.Optional(Type.Array(TLSRoute, { description: "TLS rules, in order" })),
  tcp: Type.Optional(Type.Array(TCPRoute, { description: "TCP rules, in order" })),
  exportTo: Type.Optional(StringList("Namespaces that see this VirtualService: . (own), * (all), or names")),
}, {
  ...closed,
  title: "VirtualServiceSpec",
  description: "Routing rules for traffic to the hosts, in the sidecars and gateways named",
});

// ---------------------------------------------------------------------------------------------
// Header names and values (Istio's ValidateHTTPHeader* and validateHeaderValue)

const TOKEN = /^[!#$%&'*+\-.^_`|~A-Za-z0-9]+$/;
const PSEUDO_HEADERS = new Set([":method", ":scheme", ":authority", ":path", ":status"]);
const JWT_CLAIM_HEADER = "@request.auth.claims";

/** Control characters Envoy rejects in header values: all but horizontal tab. */
function hasControlChars(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return true;
  }
  return false;
}

/** Whether a match header name is Istio's JWT claim form, `@request.auth.claims.x` or `[x]`. */
export function isJwtClaimHeader(name: string): boolean {
  if (!name.toLowerCase().startsWith(JWT_CLAIM_HEADER)) return false;
  const rest = name.slice(JWT_CLAIM_HEADER.length);
  return (rest.startsWith(".") && rest.length > 1) ||
    (rest.startsWith("[") && rest.endsWith("]") && rest.length > 2);
}

function isAuthorityHeader(name: string): boolean {
  const l = name.toLowerCase();
  return l === ":authority" || l === "host";
}

function matchHeaderNameProblem(name: string): string | undefined {
  if (name === "") return "header name cannot be empty";
  if (isJwtClaimHeader(name) || PSEUDO_HEADERS.has(name) || TOKEN.test(name)) return undefined;
  return `"${name}" is not a valid header name`;
}

/**
 * Why a header value is not valid for Envoy, or undefined: no control characters, and `%` starts
 * a `%VARIABLE%` or `%VARIABLE(args)%` unless doubled (a port of Envoy's header formatter grammar).
 */
export function headerValueProblem(value: string): string | undefined {
  if (hasControlChars(value)) return "header value contains control characters";
  type State =
    | "literal"
    | "name"
    | "argsStart"
    | "stringStart"
    | "string"
    | "afterString"
    | "argsEnd"
    | "varEnd";
  let state: State = "literal";
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    switch (state) {
      case "literal":
        if (c !== "%") break;
        if (i + 1 >= value.length) return 'un-escaped "%" at the end; write "%%" for a literal %';
        if (value[i + 1] === "%") i++;
        else state = "name";
        break;
      case "name":
        if (c === "%") state = "literal";
        else if (c === "(") state = "argsStart";
        break;
      case "argsStart":
        if (c === "[") state = "stringStart";
        else if (c !== " ") state = "string";
        break;
      case "afterString":
        if (c === ",") state = "stringStart";
        else if (c === "]") state = "argsEnd";
        else if (c !== " ") return `expected ",", "]" or a space in "${value}"`;
        break;
      case "stringStart":
        if (c === '"') state = "string";
        else if (c !== " ") return `expected '"' in "${value}"`;
        break;
      case "string":
        if (c === "\\") {
          if (i + 1 >= value.length) return `unterminated backslash in "${value}"`;
          i++;
        } else if (c === ")") state = "varEnd";
        else if (c === '"') state = "afterString";
        break;
      case "argsEnd":
        if (c === ")") state = "varEnd";
        else if (c !== " ") return `expected ")" in "${value}"`;
        break;
      case "varEnd":
        if (c === "%") state = "literal";
        else if (c !== " ") return `expected "%" closing the variable in "${value}"`;
        break;
    }
  }
  if (state !== "literal") {
    return `unterminated variable expression in "${value}"; write "%%" for a literal %`;
  }
  return undefined;
}

/** Istio's header manipulation checks on a `headers` block (route or destination level). */
function checkHeaderOperations(headers: unknown, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  const h = asObject(headers);
  if (!h) return out;
  for (const side of ["request", "response"] as const) {
    const ops = asObject(h[side]);
    if (!ops) continue;
    for (const op of ["set", "add"] as const) {
      for (const [name, value] of entriesOf(ops[op])) {
        const p = [...at, side, op, name];
        const problem = side === "request"
          ? requestHeaderNameProblem(name)
          : headerOperationNameProblem(name);
        if (problem) out.push(error(p, problem));
        const vp = typeof value === "string" ? headerValueProblem(value) : undefined;
        if (vp) out.push(error(p, vp));
      }
    }
    asArray(ops.remove).forEach((name, i) => {
      const problem = typeof name === "string" ? headerOperationNameProblem(name) : undefined;
      if (problem) out.push(error([...at, side, "remove", i], problem));
    });
  }
  return out;
}

function requestHeaderNameProblem(name: string): string | undefined {
  if (name === "") return "header name cannot be empty";
  // Host and :authority may be set on requests (they rewrite the authority); other pseudo headers may not.
  if (name.startsWith(":") && !isAuthorityHeader(name)) {
    return `invalid header "${name}": header cannot have ":" prefix`;
  }
  return undefined;
}

function headerOperationNameProblem(name: string): string | undefined {
  if (name === "") return "header name cannot be empty";
  if (name.toLowerCase() === "host") {
    return `invalid header "${name}": cannot set or remove the Host header here`;
  }
  if (name.startsWith(":")) return `invalid header "${name}": header cannot have ":" prefix`;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Destinations, gateways, hosts

/** Istio's validateDestination: host a (wildcard) domain but not `*`; subset a DNS label. */
function checkDestination(dest: unknown, at: FieldPath): Finding[] {
  const d = asObject(dest);
  if (!d) return [];
  const out: Finding[] = [];
  const host = asString(d.host);
  if (host === "*") out.push(error([...at, "host"], 'destination host cannot be "*"'));
  else if (host !== undefined) {
    const problem = wildcardDomainProblem(host);
    if (problem) out.push(error([...at, "host"], problem));
  }
  const subset = asString(d.subset);
  if (subset !== undefined && !isDns1123Label(subset)) {
    out.push(error([...at, "subset"], `invalid subset name "${subset}": must be a DNS-1123 label`));
  }
  return out;
}

/** Istio's validateHTTPRouteDestinations / validateRouteDestinations. */
function checkRouteDestinations(route: unknown, at: FieldPath, http: boolean): Finding[] {
  const out: Finding[] = [];
  const list = asArray(route);
  let total = 0;
  list.forEach((r, i) => {
    const rd = asObject(r);
    if (!rd) return;
    out.push(...checkDestination(rd.destination, [...at, i, "destination"]));
    if (http) out.push(...checkHeaderOperations(rd.headers, [...at, i, "headers"]));
    const w = asNumber(rd.weight) ?? 0;
    if (w < 0) out.push(error([...at, i, "weight"], `weight ${w} must not be negative`));
    total += w;
  });
  if (list.length > 1 && total === 0) {
    out.push(error(at, "total destination weight is 0: set weights when there are several destinations"));
  }
  return out;
}

/**
 * Istio's validateGatewayNames: `namespace/name`, or the legacy `name` / `name.namespace[.svc…]`
 * form, or `mesh`.
 */
export function checkGatewayNames(names: unknown, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  asArray(names).forEach((n, i) => {
    if (typeof n !== "string") return;
    const p = [...at, i];
    const slash = n.indexOf("/");
    if (slash < 0) {
      if (n.includes(".")) {
        const parts = n.split(".");
        out.push(
          warning(p, `legacy gateway name "${n}"; prefer the namespace/name form: "${parts[1]}/${parts[0]}"`),
        );
      }
      const problem = fqdnProblem(n);
      if (problem) out.push(error(p, problem));
      return;
    }
    const ns = n.slice(0, slash);
    const name = n.slice(slash + 1);
    if (ns === "" || name === "") {
      out.push(error(p, "namespace and name in namespace/name cannot be empty"));
      return;
    }
    if (!isDns1123Label(ns)) out.push(error(p, `invalid namespace "${ns}" in gateway name`));
    if (!isDns1123Label(name)) out.push(error(p, `invalid gateway name "${name}"`));
  });
  return out;
}

/**
 * Istio's ValidateWildcardDomainForVirtualServiceBoundToGateway: at a gateway an SNI host may also
 * be the name Istio generates for AUTO_PASSTHROUGH, `outbound_.<port>_._.<host>`.
 */
function gatewayHostProblem(host: string, sni: boolean): string | undefined {
  if (sni && host.startsWith("outbound_")) {
    const parts = host.split("_");
    const format = "outbound_.<PORT>_._.<HOSTNAME>";
    if (parts.length < 4) return `domain name "${host}" invalid, should follow the ${format} format`;
    const port = parts[1].replace(/^\.+|\.+$/g, "");
    const name = parts[3].replace(/^\.+|\.+$/g, "");
    if (!/[0-9]/.test(port)) return `domain name "${host}" invalid (label "${port}" invalid); use ${format}`;
    if (!/[a-zA-Z]/.test(name)) {
      return `domain name "${host}" invalid (label "${name}" invalid); use ${format}`;
    }
    return undefined;
  }
  return wildcardDomainProblem(host);
}

// ---------------------------------------------------------------------------------------------
// HTTP routes

interface VsContext {
  hosts: string[];
  /** No hosts: this VirtualService is a delegate of another's route. */
  isDelegate: boolean;
  /** Bound to a gateway and not to the mesh; JWT claim matches need it. */
  appliesToGateway: boolean;
  /** Some TLS route matches on SNI. */
  sni: boolean;
}

function checkHttpMatch(match: unknown, at: FieldPath, vs: VsContext): Finding[] {
  const m = asObject(match);
  if (!m) return [];
  const out: Finding[] = [];
  for (const field of ["headers", "withoutHeaders"] as const) {
    for (const [name, sm] of entriesOf(m[field])) {
      const p = [...at, field, name];
      const problem = matchHeaderNameProblem(name);
      if (problem) out.push(error(p, problem));
      if (isJwtClaimHeader(name) && !vs.appliesToGateway) {
        out.push(
          error(p, "JWT claim based routing is only supported at gateways; set gateways (without mesh)"),
        );
      }
      out.push(...checkStringMatch(sm, p, { empty: "presence", starIsPresence: field === "withoutHeaders" }));
    }
  }
  out.push(...checkStringMatch(m.uri, [...at, "uri"], { empty: "any", allowEmptyPrefix: true }));
  for (const f of ["scheme", "method", "authority"] as const) {
    out.push(...checkStringMatch(m[f], [...at, f], { empty: "any" }));
  }
  for (const [name, sm] of entriesOf(m.queryParams)) {
    out.push(...checkStringMatch(sm, [...at, "queryParams", name], { empty: "presence" }));
  }
  out.push(...checkLabels(m.sourceLabels, [...at, "sourceLabels"]));
  out.push(...checkGatewayNames(m.gateways, [...at, "gateways"]));
  const ns = asString(m.sourceNamespace);
  if (ns && !isDns1123Label(ns)) out.push(error([...at, "sourceNamespace"], `invalid namespace "${ns}"`));
  return out;
}

/** Istio's validateHTTPRouteConflict: which of route, redirect, directResponse, delegate go together. */
function checkRouteConflicts(r: Obj, at: FieldPath, vs: VsContext): Finding[] {
  const out: Finding[] = [];
  const has = (f: string): boolean => isSet(r[f]);
  const routes = asArray(r.route).length;
  if (!vs.isDelegate && has("delegate")) {
    // A route that delegates takes its destinations from the delegate VirtualService.
    if (has("redirect")) out.push(error([...at, "redirect"], "a route with delegate must not set redirect"));
    if (has("route")) out.push(error([...at, "route"], "a route with delegate must not set route"));
    return out;
  }
  if (vs.isDelegate && has("delegate")) {
    out.push(error([...at, "delegate"], "a delegate VirtualService's routes cannot delegate again"));
  }
  const exclusive = (what: string): void => {
    if (routes > 0) out.push(error([...at, "route"], `a route cannot have both route and ${what}`));
    if (has("fault")) out.push(error([...at, "fault"], `a route cannot have both fault and ${what}`));
    if (has("rewrite")) out.push(error([...at, "rewrite"], `a route cannot have both rewrite and ${what}`));
  };
  if (has("redirect")) {
    exclusive("redirect");
    if (has("directResponse")) {
      out.push(error([...at, "directResponse"], "a route cannot have both directResponse and redirect"));
    }
  } else if (has("directResponse")) {
    exclusive("directResponse");
  } else if (routes === 0) {
    out.push(error(at, "a route needs one of route, redirect, directResponse or delegate"));
  }
  if (has("mirror") && asArray(r.mirrors).length > 0) {
    out.push(error([...at, "mirrors"], "a route cannot have both mirror and mirrors"));
  }
  return out;
}

function checkRedirect(redirect: Obj, at: FieldPath, matches: unknown[]): Finding[] {
  const out: Finding[] = [];
  const uri = asString(redirect.uri) ?? "";
  const prefixRewrite = asString(redirect.prefixRewrite) ?? "";
  if (uri !== "" && prefixRewrite !== "") {
    out.push(error(at, "redirect may set only one of uri or prefixRewrite"));
  }
  if (prefixRewrite !== "") {
    const i = matches.findIndex((m) => {
      const u = asObject(asObject(m)?.uri);
      return u !== undefined && !isSet(u.prefix);
    });
    if (i >= 0) {
      out.push(
        error(
          [...at, "prefixRewrite"],
          `prefixRewrite requires prefix uri matches; match ${i} is not a prefix`,
        ),
      );
    }
  }
  const targets = ["uri", "prefixRewrite", "authority", "scheme"].some((f) =>
    (asString(redirect[f]) ?? "") !== ""
  );
  if (!targets && !isSet(redirect.port) && !isSet(redirect.derivePort)) {
    out.push(
      error(at, "redirect must set at least one of uri, prefixRewrite, authority, scheme, port, derivePort"),
    );
  }
  if (isSet(redirect.port) && isSet(redirect.derivePort)) {
    out.push(error([...at, "derivePort"], "redirect may set only one of port or derivePort"));
  }
  const code = asNumber(redirect.redirectCode);
  if (code !== undefined && code !== 0 && (code < 300 || code > 399)) {
    out.push(error([...at, "redirectCode"], `${code} is not a valid redirect code: must be 3xx`));
  }
  const scheme = asString(redirect.scheme);
  if (scheme && scheme !== "http" && scheme !== "https") {
    out.push(error([...at, "scheme"], `invalid redirect scheme "${scheme}": must be "http" or "https"`));
  }
  return out;
}

const KB = 1024;
const MB = 1024 * KB;

function checkHttpStatus(status: unknown, at: FieldPath): Finding[] {
  const s = asNumber(status);
  if (s === undefined || (s >= 200 && s <= 599)) return [];
  return [error(at, `HTTP status ${s} is not in the range 200-599`)];
}

function checkDirectResponse(dr: Obj, at: FieldPath): Finding[] {
  const out = checkHttpStatus(dr.status, [...at, "status"]);
  const body = asObject(dr.body);
  if (!body) return out;
  if (isSet(body.string) && isSet(body.bytes)) {
    out.push(error([...at, "body"], "body may set only one of string or bytes"));
  }
  const text = asString(body.string);
  const b64 = asString(body.bytes);
  const size = text !== undefined
    ? new TextEncoder().encode(text).length
    : b64 !== undefined
    ? b64.length * 3 / 4
    : 0;
  if (size > MB) {
    out.push(
      error(
        [...at, "body"],
        "direct response bodies must be smaller than 1MB (they are sent to every proxy)",
      ),
    );
  } else if (size > 100 * KB) {
    out.push(
      warning(
        [...at, "body"],
        "large direct response bodies (over 100KB) slow down configuration distribution",
      ),
    );
  }
  return out;
}

/** Envoy's retry conditions (x-envoy-retry-on and x-envoy-retry-grpc-on), as Istio lists them. */
export const RETRY_ON_POLICIES: ReadonlySet<string> = new Set([
  "5xx",
  "gateway-error",
  "reset",
  "reset-before-request",
  "connect-failure",
  "retriable-4xx",
  "refused-stream",
  "retriable-status-codes",
  "retriable-headers",
  "envoy-ratelimited",
  "http3-post-connect-failure",
  "cancelled",
  "deadline-exceeded",
  "internal",
  "resource-exhausted",
  "unavailable",
]);

/** HTTP status codes with a standard name (Go's http.StatusText), which retryOn accepts. */
const KNOWN_STATUS_CODES = new Set([
  100,
  101,
  102,
  103,
  ...range(200, 208),
  226,
  ...range(300, 305),
  307,
  308,
  ...range(400, 418),
  ...range(421, 426),
  428,
  429,
  431,
  451,
  ...range(500, 508),
  510,
  511,
]);

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** Istio's ValidateHTTPRetry. */
function checkRetries(retries: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  const attempts = asNumber(retries.attempts) ?? 0;
  if (attempts < 0) out.push(error([...at, "attempts"], "attempts cannot be negative"));
  if (
    attempts === 0 &&
    (isSet(retries.perTryTimeout) || asString(retries.retryOn) || isSet(retries.retryRemoteLocalities))
  ) {
    out.push(error(at, "retry settings have no effect with attempts 0 (retries disabled); set attempts"));
  }
  out.push(...checkDuration(retries.perTryTimeout, [...at, "perTryTimeout"]));
  out.push(...checkDuration(retries.backoff, [...at, "backoff"]));
  const retryOn = asString(retries.retryOn);
  if (retryOn) {
    for (const policy of retryOn.split(",")) {
      const code = /^[+-]?[0-9]+$/.test(policy) ? Number(policy) : 0;
      if (!KNOWN_STATUS_CODES.has(code) && !RETRY_ON_POLICIES.has(policy)) {
        out.push(
          error([...at, "retryOn"], `"${policy}" is not a valid retryOn policy (no spaces around commas)`),
        );
      }
    }
  }
  return out;
}

function checkRewrite(rewrite: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  const uri = asString(rewrite.uri) ?? "";
  const regex = asObject(rewrite.uriRegexRewrite);
  if (uri !== "" && regex) out.push(error(at, "rewrite may set only one of uri or uriRegexRewrite"));
  if (uri === "" && !regex && (asString(rewrite.authority) ?? "") === "") {
    out.push(error(at, "rewrite must set at least one of uri, uriRegexRewrite, authority"));
  }
  if (regex) {
    const match = asString(regex.match) ?? "";
    if (match === "" || (asString(regex.rewrite) ?? "") === "") {
      out.push(error([...at, "uriRegexRewrite"], "uriRegexRewrite needs both match and rewrite"));
    }
    if (match !== "") out.push(...checkRegex(match, [...at, "uriRegexRewrite", "match"]));
  }
  return out;
}

/** Istio's validateAuthorityRewrite: the authority may be rewritten in one place only. */
function checkAuthorityRewrite(r: Obj, at: FieldPath): Finding[] {
  let current = asString(asObject(r.rewrite)?.authority) ?? "";
  const request = asObject(asObject(r.headers)?.request);
  for (const op of ["set", "add"] as const) {
    for (const [name, value] of entriesOf(request?.[op])) {
      if (!isAuthorityHeader(name)) continue;
      if (current !== "") {
        return [error(
          [...at, "headers", "request", op, name],
          `the authority is set twice: "${current}" and "${String(value)}"; set it in one place`,
        )];
      }
      current = String(value);
    }
  }
  return [];
}

const CORS_METHODS = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "CONNECT",
  "OPTIONS",
  "TRACE",
  "*",
]);

function checkCors(cors: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  asArray(cors.allowOrigins).forEach((o, i) => {
    out.push(...checkStringMatch(o, [...at, "allowOrigins", i], { empty: "invalid" }));
  });
  if (asArray(cors.allowOrigin).length > 0) {
    out.push(warning([...at, "allowOrigin"], "allowOrigin is deprecated; use allowOrigins"));
  }
  asArray(cors.allowMethods).forEach((m, i) => {
    if (typeof m === "string" && !CORS_METHODS.has(m)) {
      out.push(error([...at, "allowMethods", i], `"${m}" is not a supported HTTP method`));
    }
  });
  for (const f of ["allowHeaders", "exposeHeaders"] as const) {
    asArray(cors[f]).forEach((h, i) => {
      if (typeof h !== "string") return;
      if (h === "") out.push(error([...at, f, i], "header name cannot be empty"));
      else if (h !== "*" && !TOKEN.test(h)) {
        out.push(error([...at, f, i], `"${h}" is not a valid header name`));
      }
    });
  }
  out.push(...checkDuration(cors.maxAge, [...at, "maxAge"], true));
  return out;
}

/** The gRPC status names Istio accepts for an abort (grpc-go's codes). */
export const GRPC_STATUS_NAMES: ReadonlySet<string> = new Set([
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
]);

/** Istio's validateHTTPFaultInjection (abort and delay). */
function checkFault(fault: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  const abort = asObject(fault.abort);
  const delay = asObject(fault.delay);
  if (!abort && !delay) out.push(error(at, "fault injection needs an abort and/or a delay"));
  if (abort) {
    const aat = [...at, "abort"];
    out.push(...checkPercent(abort.percentage, [...aat, "percentage"]));
    const types = (["httpStatus", "grpcStatus", "http2Error"] as const).filter((f) => isSet(abort[f]));
    if (types.length > 1) out.push(error(aat, `only one of httpStatus, grpcStatus, http2Error may be set`));
    else if (types.length === 0) {
      out.push(warning(aat, "abort has no httpStatus or grpcStatus, so it does nothing"));
    } else if (types[0] === "httpStatus") {
      out.push(...checkHttpStatus(abort.httpStatus, [...aat, "httpStatus"]));
    } else if (types[0] === "http2Error") {
      out.push(error([...aat, "http2Error"], "http2Error aborts are not supported"));
    } else {
      const s = asString(abort.grpcStatus);
      if (s !== undefined && !GRPC_STATUS_NAMES.has(s)) {
        out.push(
          error([...aat, "grpcStatus"], `gRPC status "${s}" is not supported; use a name such as NOT_FOUND`),
        );
      }
    }
  }
  if (delay) {
    const dat = [...at, "delay"];
    out.push(...checkPercent(delay.percentage, [...dat, "percentage"]));
    const percent = asNumber(delay.percent);
    if (percent !== undefined && (percent < 0 || percent > 100)) {
      out.push(error([...dat, "percent"], `percentage ${percent} is not in the range 0..100`));
    }
    if (isSet(delay.fixedDelay) && isSet(delay.exponentialDelay)) {
      out.push(error(dat, "only one of fixedDelay, exponentialDelay may be set"));
    }
    out.push(...checkDuration(delay.fixedDelay, [...dat, "fixedDelay"]));
    if (isSet(delay.exponentialDelay)) {
      out.push(...checkDuration(delay.exponentialDelay, [...dat, "exponentialDelay"]));
      out.push(error([...dat, "exponentialDelay"], "exponentialDelay is not supported; use fixedDelay"));
    }
  }
  return out;
}

function checkMirrors(r: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  for (const f of ["mirrorPercent", "mirror_percent"] as const) {
    const v = asNumber(r[f]);
    if (v === undefined) continue;
    if (v > 100) out.push(error([...at, f], `${f} must be at most 100, got ${v}`));
    out.push(warning([...at, f], `${f} is deprecated; use mirrorPercentage`));
  }
  const pct = asNumber(asObject(r.mirrorPercentage)?.value);
  if (pct !== undefined && (pct < 0 || pct > 100)) {
    out.push(
      error([...at, "mirrorPercentage", "value"], `mirrorPercentage must be within 0..100, got ${pct}`),
    );
  }
  out.push(...checkDestination(r.mirror, [...at, "mirror"]));
  asArray(r.mirrors).forEach((m, i) => {
    const mirror = asObject(m);
    if (!mirror) return;
    out.push(...checkDestination(mirror.destination, [...at, "mirrors", i, "destination"]));
    const v = asNumber(asObject(mirror.percentage)?.value);
    if (v !== undefined && (v < 0 || v > 100)) {
      out.push(
        error(
          [...at, "mirrors", i, "percentage", "value"],
          `mirror percentage must be within 0..100, got ${v}`,
        ),
      );
    }
  });
  return out;
}

/** Istio's validateHTTPRoute on one HTTP rule. */
function checkHttpRoute(r: Obj, at: FieldPath, vs: VsContext): Finding[] {
  const matches = asArray(r.match);
  const out = checkRouteConflicts(r, at, vs);
  matches.forEach((m, i) => out.push(...checkHttpMatch(m, [...at, "match", i], vs)));
  out.push(...checkHeaderOperations(r.headers, [...at, "headers"]));
  const cors = asObject(r.corsPolicy);
  if (cors) out.push(...checkCors(cors, [...at, "corsPolicy"]));
  const fault = asObject(r.fault);
  if (fault) out.push(...checkFault(fault, [...at, "fault"]));
  out.push(...checkMirrors(r, at));
  const redirect = asObject(r.redirect);
  if (redirect) out.push(...checkRedirect(redirect, [...at, "redirect"], matches));
  const dr = asObject(r.directResponse);
  if (dr) out.push(...checkDirectResponse(dr, [...at, "directResponse"]));
  const retries = asObject(r.retries);
  if (retries) out.push(...checkRetries(retries, [...at, "retries"]));
  const rewrite = asObject(r.rewrite);
  if (rewrite) out.push(...checkRewrite(rewrite, [...at, "rewrite"]));
  out.push(...checkAuthorityRewrite(r, at));
  out.push(...checkRouteDestinations(r.route, [...at, "route"], true));
  out.push(...checkDuration(r.timeout, [...at, "timeout"]));
  if (vs.isDelegate === false && isSet(r.delegate) && !asString(asObject(r.delegate)?.name)) {
    out.push(warning([...at, "delegate", "name"], "delegate has no name, so it delegates to nothing"));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// TLS and TCP routes

function checkSniHost(sni: string, at: FieldPath, vs: VsContext): Finding[] {
  const problem = vs.appliesToGateway ? gatewayHostProblem(sni, true) : wildcardDomainProblem(sni);
  if (problem) {
    if (isIp(sni)) {
      return [
        warning(at, `an IP address ("${sni}") as SNI goes against the SNI spec; most clients do not send it`),
      ];
    }
    return [error(at, problem)];
  }
  if (vs.hosts.some((h) => hostSubsetOf(sni, h))) return [];
  return [
    error(at, `SNI host "${sni}" is not within any of the VirtualService's hosts: [${vs.hosts.join(", ")}]`),
  ];
}

function checkL4Match(m: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  asArray(m.destinationSubnets).forEach((s, i) => {
    if (typeof s === "string" && !isIpOrCidr(s)) {
      out.push(error([...at, "destinationSubnets", i], `"${s}" is not a valid IP address or CIDR block`));
    }
  });
  out.push(...checkLabels(m.sourceLabels, [...at, "sourceLabels"]));
  out.push(...checkGatewayNames(m.gateways, [...at, "gateways"]));
  return out;
}

function checkTlsRoute(r: Obj, at: FieldPath, vs: VsContext): Finding[] {
  const out: Finding[] = [];
  const matches = asArray(r.match);
  if (Array.isArray(r.match) && matches.length === 0) {
    out.push(error([...at, "match"], "a TLS route needs at least one match"));
  }
  matches.forEach((mm, i) => {
    const m = asObject(mm);
    if (!m) return;
    const mat = [...at, "match", i];
    if (Array.isArray(m.sniHosts) && m.sniHosts.length === 0) {
      out.push(error([...mat, "sniHosts"], "a TLS match needs at least one SNI host"));
    }
    asArray(m.sniHosts).forEach((s, j) => {
      if (typeof s === "string") out.push(...checkSniHost(s, [...mat, "sniHosts", j], vs));
    });
    out.push(...checkL4Match(m, mat));
  });
  if (asArray(r.route).length === 0) out.push(error(at, "a TLS route needs at least one route destination"));
  out.push(...checkRouteDestinations(r.route, [...at, "route"], false));
  return out;
}

function checkTcpRoute(r: Obj, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  asArray(r.match).forEach((m, i) => {
    const mo = asObject(m);
    if (mo) out.push(...checkL4Match(mo, [...at, "match", i]));
  });
  if (asArray(r.route).length === 0) out.push(error(at, "a TCP route needs at least one route destination"));
  out.push(...checkRouteDestinations(r.route, [...at, "route"], false));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Unreachable rules (Istio's analyzeUnreachable*Rules, exact duplicates only)

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  const o = asObject(v);
  if (o) {
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

function checkUnreachable(rules: unknown, kind: "http" | "tls" | "tcp"): Finding[] {
  const out: Finding[] = [];
  const seen = new Map<string, number>();
  let catchAll = -1;
  const list = asArray(rules);
  const label = (i: number): string => {
    const name = kind === "http" ? asString(asObject(list[i])?.name) : undefined;
    return name ? `"${name}"` : `#${i}`;
  };
  list.forEach((rule, i) => {
    const at = ["spec", kind, i];
    const matches = asArray(asObject(rule)?.match);
    if (!asObject(rule)) return;
    if (matches.length === 0) {
      if (catchAll >= 0) {
        out.push(warning(at, `rule ${label(i)} is never used: only the last rule can have no matches`));
      }
      catchAll = i;
      return;
    }
    if (catchAll >= 0) {
      out.push(
        warning(at, `rule ${label(i)} is never used: rule ${label(catchAll)} before it has no matches`),
      );
      return;
    }
    let duplicates = 0;
    matches.forEach((m, j) => {
      const mo = asObject(m);
      // A match's name only labels it; it does not change what it matches.
      const key = canonicalJson(mo && kind === "http" ? { ...mo, name: undefined } : m);
      const prior = seen.get(key);
      if (prior !== undefined) {
        duplicates++;
        out.push(
          warning([...at, "match", j], `match #${j} is never used: rule ${label(prior)} has the same match`),
        );
      } else seen.set(key, i);
    });
    if (duplicates === matches.length) {
      out.push(warning(at, `rule ${label(i)} is never used: prior rules have all its matches`));
    }
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// The VirtualService

function checkHosts(spec: Obj, vs: VsContext, appliesToMesh: boolean): Finding[] {
  const out: Finding[] = [];
  let allValid = true;
  vs.hosts.forEach((h, i) => {
    const at = ["spec", "hosts", i];
    const problem = vs.appliesToGateway ? gatewayHostProblem(h, vs.sni) : wildcardDomainProblem(h);
    if (problem) {
      if (!isIp(h)) {
        out.push(error(at, problem));
        allValid = false;
      }
    } else if (appliesToMesh && h === "*") {
      out.push(
        error(at, 'the host "*" is not allowed for a VirtualService bound to the mesh; bind it to a gateway'),
      );
      allValid = false;
    }
  });
  if (allValid) {
    for (let i = 0; i < vs.hosts.length; i++) {
      for (let j = i + 1; j < vs.hosts.length; j++) {
        if (hostsOverlap(vs.hosts[i], vs.hosts[j])) {
          out.push(
            error(
              ["spec", "hosts", j],
              `duplicate hosts in virtual service: ${vs.hosts[i]} & ${vs.hosts[j]}`,
            ),
          );
        }
      }
    }
  }
  if (!Array.isArray(spec.hosts) || spec.hosts.length === 0) {
    // Without hosts this is a delegate: it is only reachable through another's route.delegate.
    if (asArray(spec.gateways).length > 0) {
      out.push(error(["spec", "gateways"], "a delegate VirtualService (no hosts) must not have gateways"));
    }
    if (asArray(spec.tls).length > 0) {
      out.push(error(["spec", "tls"], "a delegate VirtualService (no hosts) cannot have tls routes"));
    }
    if (asArray(spec.tcp).length > 0) {
      out.push(error(["spec", "tcp"], "a delegate VirtualService (no hosts) cannot have tcp routes"));
    }
  }
  return out;
}

/**
 * Istio's ValidateVirtualService on a whole resource.
 *
 * @returns the findings; the resource may be any parsed value
 */
export function virtualServiceRules(resource: unknown): Finding[] {
  const spec = asObject(asObject(resource)?.spec);
  if (!spec) return [];
  const gateways = asArray(spec.gateways).filter((g): g is string => typeof g === "string");
  const appliesToGateway = gateways.length > 0 && !gateways.includes(MESH_GATEWAY);
  const vs: VsContext = {
    hosts: asArray(spec.hosts).filter((h): h is string => typeof h === "string"),
    isDelegate: asArray(spec.hosts).length === 0,
    appliesToGateway,
    sni: asArray(spec.tls).some((t) =>
      asArray(asObject(t)?.match).some((m) => asArray(asObject(m)?.sniHosts).length > 0)
    ),
  };
  const out = checkHosts(spec, vs, !appliesToGateway);
  out.push(...checkGatewayNames(spec.gateways, ["spec", "gateways"]));
  const http = asArray(spec.http);
  const tls = asArray(spec.tls);
  const tcp = asArray(spec.tcp);
  if (http.length === 0 && tls.length === 0 && tcp.length === 0) {
    out.push(error(["spec"], "a VirtualService needs at least one of http, tls, tcp"));
  }
  http.forEach((r, i) => {
    const ro = asObject(r);
    if (ro) out.push(...checkHttpRoute(ro, ["spec", "http", i], vs));
  });
  tls.forEach((r, i) => {
    const ro = asObject(r);
    if (ro) out.push(...checkTlsRoute(ro, ["spec", "tls", i], vs));
  });
  tcp.forEach((r, i) => {
    const ro = asObject(r);
    if (ro) out.push(...checkTcpRoute(ro, ["spec", "tcp", i]));
  });
  out.push(...checkExportTo(spec.exportTo, namespaceOf(resource), ["spec", "exportTo"], false));
  out.push(
    ...checkUnreachable(spec.http, "http"),
    ...checkUnreachable(spec.tls, "tls"),
    ...checkUnreachable(spec.tcp, "tcp"),
  );
  return out;
}

/** VirtualService: schema and Istio's rules. */
export const virtualService = defineKind({
  kind: "VirtualService",
  group: "networking",
  plural: "virtualservices",
  schema: ResourceEnvelope(
    "VirtualService",
    VirtualServiceSpec,
    "Routing rules applied to traffic addressed to a host: matching, splitting, rewrites, retries, faults",
  ),
  rules(vs): Finding[] {
    return virtualServiceRules(vs);
  },
});
