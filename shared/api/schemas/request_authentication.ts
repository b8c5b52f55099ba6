/**
 * RequestAuthentication (security.mesh.io/v1): which end-user JWTs a workload accepts. Fields are
 * Istio's security/v1 RequestAuthentication and JWTRule; sources: the policies seed
 * ("RequestAuthentication.spec", "End-user authentication") and Istio's ValidateRequestAuthentication
 * and validateJwtRule, made stricter where the mesh's issue asks (issuer required; jwks and jwksUri
 * exclusive; jwksUri at most 2048 characters).
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding, warning } from "../finding.ts";
import { closed, PolicyTargetReference, ResourceEnvelope, StringList, WorkloadSelector } from "./common.ts";
import { checkDuration } from "./duration.ts";
import { defineKind } from "./kind_definition.ts";
import { checkTargetRefsUnsupported } from "./target_ref_rules.ts";
import { checkWorkloadSelector } from "./selector_rules.ts";

/** The longest jwksUri accepted, in characters. */
export const MAX_JWKS_URI_LENGTH = 2048;

const JwtHeader = Type.Object({
  name: Type.String({ description: "HTTP header name holding the token" }),
  prefix: Type.Optional(Type.String({ description: 'Prefix before the token, e.g. "Bearer "' })),
}, { ...closed, title: "JWTHeader", description: "A request header that may carry the token" });

const ClaimToHeader = Type.Object({
  header: Type.String({ description: "Request header to write" }),
  claim: Type.String({ description: "Claim whose value is written; nested with dots" }),
}, { ...closed, title: "ClaimToHeader", description: "Copies a claim of a verified token to a header" });

const JwtRule = Type.Object({
  issuer: Type.String({ description: "Expected `iss`; required" }),
  audiences: Type.Optional(StringList("Accepted `aud` values; when empty, the service's host names")),
  jwksUri: Type.Optional(Type.String({ description: "http(s) URL of the JSON Web Key Set" })),
  jwks: Type.Optional(Type.String({ description: "Inline JSON Web Key Set; excludes jwksUri" })),
  fromHeaders: Type.Optional(Type.Array(JwtHeader, { description: "Headers to read the token from" })),
  fromParams: Type.Optional(StringList("Query parameters to read the token from")),
  fromCookies: Type.Optional(StringList("Cookies to read the token from")),
  outputPayloadToHeader: Type.Optional(
    Type.String({ description: "Header that receives the base64 payload of a verified token" }),
  ),
  forwardOriginalToken: Type.Optional(
    Type.Boolean({ description: "Keep the token in the forwarded request" }),
  ),
  outputClaimToHeaders: Type.Optional(
    Type.Array(ClaimToHeader, { description: "Claims of a verified token to copy to request headers" }),
  ),
  timeout: Type.Optional(Type.String({ description: "JWKS fetch timeout, a duration such as 5s" })),
  spaceDelimitedClaims: Type.Optional(StringList("Claims whose string value is a space-separated list")),
}, {
  ...closed,
  title: "JWTRule",
  description: "How to find and verify the JWTs of one issuer; default location: Authorization: Bearer",
});

const RequestAuthenticationSpec = Type.Object({
  selector: Type.Optional(WorkloadSelector),
  targetRef: Type.Optional(PolicyTargetReference),
  targetRefs: Type.Optional(
    Type.Array(PolicyTargetReference, { description: "Gateway API attachments; not supported by this mesh" }),
  ),
  jwtRules: Type.Optional(Type.Array(JwtRule, { description: "One rule per accepted issuer" })),
}, {
  ...closed,
  title: "RequestAuthenticationSpec",
  description: "JWTs the selected workloads verify; a request with an invalid token is rejected",
});

/** A strict HTTP header name (RFC 7230 token), as Istio's ValidateStrictHTTPHeaderName. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** RequestAuthentication: schema and Istio's rules. */
export const requestAuthentication = defineKind({
  kind: "RequestAuthentication",
  group: "security",
  plural: "requestauthentications",
  schema: ResourceEnvelope(
    "RequestAuthentication",
    RequestAuthenticationSpec,
    "Which end-user JWTs workloads accept; requests without a token are let through",
  ),
  rules(ra): Finding[] {
    const spec = ra.spec ?? {};
    const out = [
      ...checkWorkloadSelector(spec.selector, ["spec", "selector"]),
      ...checkTargetRefsUnsupported(spec),
    ];
    (spec.jwtRules ?? []).forEach((rule, i) => out.push(...checkJwtRule(rule, ["spec", "jwtRules", i])));
    return out;
  },
});

type JwtRuleInput = {
  issuer?: string;
  audiences?: string[];
  jwksUri?: string;
  jwks?: string;
  fromHeaders?: { name?: string }[];
  fromParams?: string[];
  fromCookies?: string[];
  outputPayloadToHeader?: string;
  outputClaimToHeaders?: { header?: string; claim?: string }[];
  timeout?: string;
};

function checkJwtRule(rule: JwtRuleInput, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  if (rule === null || typeof rule !== "object") return out;
  if (typeof rule.issuer === "string" && rule.issuer === "") {
    out.push(error([...at, "issuer"], "issuer must not be empty"));
  }
  (rule.audiences ?? []).forEach((a, j) => {
    if (a === "") out.push(error([...at, "audiences", j], "audience must not be empty"));
  });
  if (rule.jwksUri !== undefined && rule.jwks !== undefined) {
    out.push(error([...at, "jwks"], "jwks and jwksUri exclude each other; set only one"));
  }
  if (typeof rule.jwksUri === "string") out.push(...checkJwksUri(rule.jwksUri, [...at, "jwksUri"]));
  if (typeof rule.jwks === "string") out.push(...checkInlineJwks(rule.jwks, [...at, "jwks"]));
  (rule.fromHeaders ?? []).forEach((h, j) => {
    if (h?.name === "") out.push(error([...at, "fromHeaders", j, "name"], "header name must not be empty"));
  });
  (rule.fromParams ?? []).forEach((p, j) => {
    if (p === "") out.push(error([...at, "fromParams", j], "query parameter name must not be empty"));
  });
  (rule.fromCookies ?? []).forEach((c, j) => {
    if (c === "") out.push(error([...at, "fromCookies", j], "cookie name must not be empty"));
  });
  if (typeof rule.outputPayloadToHeader === "string" && !HEADER_NAME.test(rule.outputPayloadToHeader)) {
    out.push(
      error([...at, "outputPayloadToHeader"], `"${rule.outputPayloadToHeader}" is not a valid header name`),
    );
  }
  (rule.outputClaimToHeaders ?? []).forEach((c, j) => {
    if (c === null || typeof c !== "object") return;
    const p = [...at, "outputClaimToHeaders", j];
    if (!c?.claim) out.push(error([...p, "claim"], "claim must not be empty"));
    if (!c?.header) out.push(error([...p, "header"], "header must not be empty"));
    else if (!HEADER_NAME.test(c.header)) {
      out.push(error([...p, "header"], `"${c.header}" is not a valid header name`));
    }
  });
  out.push(...checkDuration(rule.timeout, [...at, "timeout"]));
  return out;
}

function checkJwksUri(uri: string, at: FieldPath): Finding[] {
  if (uri.length > MAX_JWKS_URI_LENGTH) {
    return [error(at, `jwksUri is ${uri.length} characters; the limit is ${MAX_JWKS_URI_LENGTH}`)];
  }
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return [error(at, `"${uri}" is not a valid URL`)];
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return [error(at, `URI scheme "${url.protocol.slice(0, -1)}" is not supported; use http or https`)];
  }
  // WHATWG URL parsing reads "https:///jwks.json" as host "jwks.json"; the text itself must name a host.
  if (url.hostname === "" || !/^https?:\/\/[^/?#]/i.test(uri)) return [error(at, "jwksUri has no host")];
  return [];
}

function checkInlineJwks(jwks: string, at: FieldPath): Finding[] {
  let set: unknown;
  try {
    set = JSON.parse(jwks);
  } catch (e) {
    return [error(at, `jwks is not JSON: ${(e as Error).message}`)];
  }
  const keys = (set as { keys?: unknown })?.keys;
  if (!Array.isArray(keys)) {
    return [error(at, 'jwks must be a JSON Web Key Set: an object with a "keys" list')];
  }
  const out: Finding[] = [];
  keys.forEach((k, i) => {
    if (k === null || typeof k !== "object" || typeof (k as { kty?: unknown }).kty !== "string") {
      out.push(error(at, `jwks key ${i} has no "kty"`));
    } else if ("d" in k || (k as { kty: string }).kty === "oct") {
      out.push(
        warning(at, `jwks key ${i} contains private or symmetric key material; only public keys are used`),
      );
    }
  });
  return out;
}
