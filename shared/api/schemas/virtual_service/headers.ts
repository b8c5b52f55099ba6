/**
 * VirtualService header names and values: the `headers` blocks that change requests and
 * responses, and the header names a match may use. Istio's ValidateHTTPHeader* checks and
 * validateHeaderValue (Envoy's header formatter grammar).
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding } from "../../finding.ts";
import { closed, StringList } from "../common.ts";
import { asArray, asObject, entriesOf } from "../networking_rules.ts";

const HeaderOperations = Type.Object({
  set: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "Headers to overwrite" })),
  add: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "Headers to append to" })),
  remove: Type.Optional(StringList("Headers to remove")),
}, { ...closed, title: "HeaderOperations", description: "Header changes; values may use Envoy %VARIABLES%" });

export const Headers = Type.Object({
  request: Type.Optional(HeaderOperations),
  response: Type.Optional(HeaderOperations),
}, { ...closed, title: "Headers", description: "Changes to request and response headers" });

export const TOKEN = /^[!#$%&'*+\-.^_`|~A-Za-z0-9]+$/;

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

export function isAuthorityHeader(name: string): boolean {
  const l = name.toLowerCase();
  return l === ":authority" || l === "host";
}

export function matchHeaderNameProblem(name: string): string | undefined {
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
export function checkHeaderOperations(headers: unknown, at: FieldPath): Finding[] {
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
