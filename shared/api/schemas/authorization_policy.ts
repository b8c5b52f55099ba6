/**
 * AuthorizationPolicy (security.mesh.io/v1): allow and deny rules over request attributes. Fields
 * are Istio's security/v1 AuthorizationPolicy; sources: the policies seed ("AuthorizationPolicy.spec",
 * "Authorization") and Istio's ValidateAuthorizationPolicy, CheckValidPathTemplate and
 * ValidateAttribute. Stricter than Istio: unknown condition keys are errors, and CUSTOM (external
 * authorization) is rejected because the proxy cannot call an external authorizer yet.
 *
 * @module
 */
import { Type } from "@sinclair/typebox";
import { error, type FieldPath, type Finding, warning } from "../finding.ts";
import { checkCondition, serviceAccountProblem, wildcardProblem } from "./authorization_conditions.ts";
import {
  closed,
  PolicyTargetReference,
  ResourceEnvelope,
  StringEnum,
  StringList,
  WorkloadSelector,
} from "./common.ts";
import { isIpOrCidr } from "./ip.ts";
import { defineKind } from "./kind_definition.ts";
import { checkPathTemplates } from "./path_template.ts";
import { checkWorkloadSelector } from "./selector_rules.ts";
import { checkTargetRefsUnsupported } from "./target_ref_rules.ts";

/** Authorization actions. ALLOW is the default. */
export const AUTHORIZATION_ACTIONS = ["ALLOW", "DENY", "AUDIT", "CUSTOM"] as const;

/** The value lists of a rule's `from[].source`, in the order Istio's reference lists them. */
export const AUTHORIZATION_SOURCE_FIELDS = [
  "principals",
  "notPrincipals",
  "requestPrincipals",
  "notRequestPrincipals",
  "namespaces",
  "notNamespaces",
  "serviceAccounts",
  "notServiceAccounts",
  "ipBlocks",
  "notIpBlocks",
  "remoteIpBlocks",
  "notRemoteIpBlocks",
  "trustDomains",
  "notTrustDomains",
] as const;

/** The value lists of a rule's `to[].operation`, in the order Istio's reference lists them. */
export const AUTHORIZATION_OPERATION_FIELDS = [
  "hosts",
  "notHosts",
  "ports",
  "notPorts",
  "methods",
  "notMethods",
  "paths",
  "notPaths",
] as const;

const SOURCE_FIELDS = AUTHORIZATION_SOURCE_FIELDS;
const OPERATION_FIELDS = AUTHORIZATION_OPERATION_FIELDS;

/** What each Source field matches; a `not` field matches when none of its values do. */
const SOURCE_DESCRIPTIONS: Record<typeof SOURCE_FIELDS[number], string> = {
  principals:
    "Peer mTLS identities, as <trust-domain>/ns/<namespace>/sa/<account>; * wildcards at either end",
  notPrincipals: "Peer mTLS identities that must not match; same format as principals",
  requestPrincipals:
    "JWT identities, as <iss>/<sub>, from a RequestAuthentication; * wildcards at either end",
  notRequestPrincipals: "JWT identities that must not match; same format as requestPrincipals",
  namespaces: "Namespaces of the peer, from its mTLS identity; * wildcards at either end",
  notNamespaces: "Peer namespaces that must not match",
  serviceAccounts:
    "Peer service accounts, as <namespace>/<account>; at most 16; not with principals or namespaces",
  notServiceAccounts: "Peer service accounts that must not match; same format as serviceAccounts",
  ipBlocks: "IPs or CIDR blocks of the connection's peer address",
  notIpBlocks: "Peer IPs or CIDR blocks that must not match",
  remoteIpBlocks: "IPs or CIDR blocks of the original client, from X-Forwarded-For or the PROXY protocol",
  notRemoteIpBlocks: "Original client IPs or CIDR blocks that must not match",
  trustDomains: "Trust domains of the peer's mTLS identity; * wildcards at either end",
  notTrustDomains: "Peer trust domains that must not match",
};

/** What each Operation field matches; a `not` field matches when none of its values do. */
const OPERATION_DESCRIPTIONS: Record<typeof OPERATION_FIELDS[number], string> = {
  hosts: "Host header values, case-insensitive; * wildcards at either end; HTTP only",
  notHosts: "Host header values that must not match; HTTP only",
  ports: "Destination ports, as decimal strings (0-65535)",
  notPorts: "Destination ports that must not match",
  methods: "HTTP methods, e.g. GET (gRPC requests are POST); HTTP only",
  notMethods: "HTTP methods that must not match; HTTP only",
  paths: "Normalized request paths, without query; * at either end or {*}/{**} templates; HTTP only",
  notPaths: "Request paths that must not match; same format as paths; HTTP only",
};

const Source = Type.Object(
  Object.fromEntries(SOURCE_FIELDS.map((f) => [f, Type.Optional(StringList(SOURCE_DESCRIPTIONS[f]))])),
  { ...closed, title: "Source", description: "Peer and request identity; fields are ANDed, values ORed" },
);

const Operation = Type.Object(
  Object.fromEntries(
    OPERATION_FIELDS.map((f) => [f, Type.Optional(StringList(OPERATION_DESCRIPTIONS[f]))]),
  ),
  { ...closed, title: "Operation", description: "Request attributes; fields are ANDed, values ORed" },
);

const Condition = Type.Object({
  key: Type.String({ description: "A documented condition key, e.g. request.headers[x-token]" }),
  values: Type.Optional(StringList("Matches when the attribute equals any value")),
  notValues: Type.Optional(StringList("Matches when the attribute equals no value")),
}, {
  ...closed,
  title: "Condition",
  description: "An extra condition on a request attribute; values or notValues must be set",
});

const Rule = Type.Object({
  from: Type.Optional(Type.Array(
    Type.Object({ source: Source }, {
      ...closed,
      title: "RuleFrom",
      description: "One accepted source of the request",
    }),
    { description: "Sources; any one must match. Absent: any source" },
  )),
  to: Type.Optional(Type.Array(
    Type.Object({ operation: Operation }, {
      ...closed,
      title: "RuleTo",
      description: "One accepted operation of the request",
    }),
    { description: "Operations; any one must match. Absent: any operation" },
  )),
  when: Type.Optional(Type.Array(Condition, { description: "Extra conditions; all must match" })),
}, { ...closed, title: "Rule", description: "Matches when every present field matches" });

const AuthorizationPolicySpec = Type.Object({
  selector: Type.Optional(WorkloadSelector),
  targetRef: Type.Optional(PolicyTargetReference),
  targetRefs: Type.Optional(
    Type.Array(PolicyTargetReference, { description: "Gateway API attachments; not supported by this mesh" }),
  ),
  rules: Type.Optional(Type.Array(Rule, {
    description: "The action applies when any rule matches; none matches nothing (ALLOW then denies all)",
  })),
  action: Type.Optional(StringEnum(AUTHORIZATION_ACTIONS, "What a matching request gets; default ALLOW")),
  provider: Type.Optional(
    Type.Object({ name: Type.String({ description: "Name of an extension provider in the mesh config" }) }, {
      ...closed,
      title: "ExtensionProvider",
      description: "The external authorizer of a CUSTOM action; CUSTOM only",
    }),
  ),
}, {
  ...closed,
  title: "AuthorizationPolicySpec",
  description: "Which requests to the selected workloads an action applies to",
});

/** AuthorizationPolicy: schema and Istio's rules. */
export const authorizationPolicy = defineKind({
  kind: "AuthorizationPolicy",
  group: "security",
  plural: "authorizationpolicies",
  schema: ResourceEnvelope(
    "AuthorizationPolicy",
    AuthorizationPolicySpec,
    "Access control for workloads: allow, deny or audit requests by source, operation and conditions",
  ),
  rules(ap): Finding[] {
    const spec = ap.spec ?? {};
    const out = [
      ...checkWorkloadSelector(spec.selector, ["spec", "selector"]),
      ...checkTargetRefsUnsupported(spec),
    ];
    const action = spec.action ?? "ALLOW";
    if (action === "CUSTOM") {
      out.push(error(
        ["spec", "action"],
        "action CUSTOM (external authorization) is not supported yet; use ALLOW, DENY or AUDIT",
      ));
      if (!spec.provider?.name) out.push(error(["spec", "provider", "name"], "CUSTOM needs provider.name"));
    } else if (spec.provider !== undefined) {
      out.push(error(["spec", "provider"], `provider is only allowed with action CUSTOM, not ${action}`));
    }
    // An empty list is as good as none: Istio's proto cannot tell them apart.
    if ((action === "DENY" || action === "CUSTOM") && !spec.rules?.length) {
      out.push(error(
        ["spec", "rules"],
        `${action} without rules never matches; add an empty rule {} to match every request`,
      ));
    }
    (spec.rules ?? []).forEach((rule, i) => out.push(...checkRule(rule, ["spec", "rules", i], action)));
    return out;
  },
});

type StringLists = Partial<Record<string, string[]>>;
type RuleInput = {
  from?: { source?: StringLists }[];
  to?: { operation?: StringLists }[];
  when?: { key?: string; values?: string[]; notValues?: string[] }[];
};

function checkRule(rule: RuleInput, at: FieldPath, action: string): Finding[] {
  const out: Finding[] = [];
  if (rule === null || typeof rule !== "object") return out;
  if (rule.from !== undefined && rule.from.length === 0) {
    out.push(error([...at, "from"], "from must not be empty"));
  }
  if (rule.to !== undefined && rule.to.length === 0) out.push(error([...at, "to"], "to must not be empty"));
  let onlyHttpFrom = false;
  let onlyHttpTo = false;
  (rule.from ?? []).forEach((from, j) => {
    const src = from?.source;
    if (!src) return;
    out.push(...checkSource(src, [...at, "from", j, "source"]));
    onlyHttpFrom ||= !SOURCE_FIELDS.some((f) =>
      f !== "requestPrincipals" && f !== "notRequestPrincipals" && src[f]
    );
  });
  (rule.to ?? []).forEach((to, j) => {
    const op = to?.operation;
    if (!op) return;
    out.push(...checkOperation(op, [...at, "to", j, "operation"]));
    onlyHttpTo ||= op.ports === undefined && op.notPorts === undefined;
  });
  (rule.when ?? []).forEach((cond, j) => {
    const p = [...at, "when", j];
    if (!cond || typeof cond.key !== "string") return;
    if (cond.key === "") {
      out.push(error([...p, "key"], "key must not be empty"));
      return;
    }
    if (!(cond.values?.length) && !(cond.notValues?.length)) {
      out.push(error(p, `a condition needs values or notValues (key ${cond.key})`));
    }
    const problem = checkCondition(cond.key, [...(cond.values ?? []), ...(cond.notValues ?? [])]);
    if (problem) out.push(error([...p, "key"], problem));
  });
  const fromOnlyHttp = rule.from !== undefined && rule.to === undefined && onlyHttpFrom;
  if (action === "DENY" && (fromOnlyHttp || (rule.to !== undefined && onlyHttpTo))) {
    out.push(warning(
      at,
      "this DENY rule uses only HTTP attributes, so it denies all traffic to TCP ports in its scope; name the ports",
    ));
  }
  return out;
}

function checkSource(src: StringLists, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  if (!SOURCE_FIELDS.some((f) => src[f] !== undefined && src[f]!.length > 0)) {
    out.push(error(at, "source must set at least one field"));
  }
  const hasSa = !!(src.serviceAccounts?.length || src.notServiceAccounts?.length);
  const hasPrincipalOrNs = !!(src.principals?.length || src.notPrincipals?.length || src.namespaces?.length ||
    src.notNamespaces?.length);
  if (hasSa && hasPrincipalOrNs) {
    out.push(error(at, "serviceAccounts cannot be combined with principals or namespaces"));
  }
  for (const f of SOURCE_FIELDS) {
    (src[f] ?? []).forEach((v, k) => {
      const p = [...at, f, k];
      if (v === "") out.push(error(p, "empty value not allowed"));
      else if (f.endsWith("pBlocks") && !isIpOrCidr(v)) {
        out.push(error(p, `"${v}" is not an IP address or CIDR range`));
      } else if (f === "serviceAccounts" || f === "notServiceAccounts") {
        const problem = serviceAccountProblem(v);
        if (problem) out.push(error(p, problem));
      } else if (f === "trustDomains" || f === "notTrustDomains") {
        const problem = v.includes("/") ? `a trust domain must not contain "/": "${v}"` : wildcardProblem(v);
        if (problem) out.push(error(p, problem));
      }
    });
  }
  for (const f of ["serviceAccounts", "notServiceAccounts"]) {
    if ((src[f]?.length ?? 0) > 16) out.push(error([...at, f], "at most 16 service accounts are allowed"));
  }
  return out;
}

function checkOperation(op: StringLists, at: FieldPath): Finding[] {
  const out: Finding[] = [];
  if (!OPERATION_FIELDS.some((f) => op[f] !== undefined && op[f]!.length > 0)) {
    out.push(error(at, "operation must set at least one field"));
  }
  for (const f of OPERATION_FIELDS) {
    (op[f] ?? []).forEach((v, k) => {
      const p = [...at, f, k];
      if (v === "") out.push(error(p, "empty value not allowed"));
      else if ((f === "ports" || f === "notPorts") && (!/^[0-9]+$/.test(v) || Number(v) > 65535)) {
        out.push(error(p, `"${v}" is not a port in 0..65535`));
      }
    });
  }
  for (const f of ["paths", "notPaths"] as const) {
    (op[f] ?? []).forEach((path, k) => {
      const problem = checkPathTemplates(path);
      if (problem) out.push(error([...at, f, k], problem));
    });
  }
  return out;
}
