/**
 * What an HTTP route does with a matching request besides forwarding it: redirect, direct
 * response, delegate to another VirtualService, rewrite the uri or authority, and which of these
 * may go together. Istio's validateHTTPRouteConflict, validateHTTPRedirect,
 * validateHTTPDirectResponse, validateHTTPRewrite and validateAuthorityRewrite.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding, warning } from "../../finding.ts";
import { closed, StringEnum } from "../common.ts";
import {
  asArray,
  asNumber,
  asObject,
  asString,
  checkRegex,
  entriesOf,
  isSet,
  type Obj,
} from "../networking_rules.ts";
import { Uint32, type VsContext } from "./fields.ts";
import { isAuthorityHeader } from "./headers.ts";

export const HTTPRedirect = Type.Object({
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

export const HTTPDirectResponse = Type.Object({
  status: Uint32("Status code, 200-599"),
  body: Type.Optional(HTTPBody),
}, { ...closed, title: "HTTPDirectResponse", description: "Answer directly instead of forwarding" });

export const Delegate = Type.Object({
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

export const HTTPRewrite = Type.Object({
  uri: Type.Optional(Type.String({ description: "Replaces the matched uri (prefix, or whole path)" })),
  authority: Type.Optional(Type.String({ description: "Replaces the Host/:authority header" })),
  uriRegexRewrite: Type.Optional(RegexRewrite),
}, { ...closed, title: "HTTPRewrite", description: "Rewrites before forwarding" });

/** Istio's validateHTTPRouteConflict: which of route, redirect, directResponse, delegate go together. */
export function checkRouteConflicts(r: Obj, at: FieldPath, vs: VsContext): Finding[] {
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

export function checkRedirect(redirect: Obj, at: FieldPath, matches: unknown[]): Finding[] {
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

export function checkHttpStatus(status: unknown, at: FieldPath): Finding[] {
  const s = asNumber(status);
  if (s === undefined || (s >= 200 && s <= 599)) return [];
  return [error(at, `HTTP status ${s} is not in the range 200-599`)];
}

export function checkDirectResponse(dr: Obj, at: FieldPath): Finding[] {
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

export function checkRewrite(rewrite: Obj, at: FieldPath): Finding[] {
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
export function checkAuthorityRewrite(r: Obj, at: FieldPath): Finding[] {
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
