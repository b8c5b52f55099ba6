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

const SOURCE_FIELDS = [
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

const OPERATION_FIELDS = [
  "hosts",
  "notHosts",
  "ports",
  "notPorts",
  "methods",
  "notMethods",
  "paths",
  "notPaths",
] as const;

const Source = Type.Object(
  Object.fromEntries(SOURCE_FIELDS.map((f) => [f, Type.Optional(StringList(`Source ${f}`))])),
  { ...closed, title: "Source", description: "Peer and request identity; fields are ANDed, values ORed" },
);

const Operation = Type.Object(
  Object.fromEntries(OPERATION_FIELDS.map((f) => [f, Type.Optional(StringList(`Operation ${f}`))])),
  { ...closed, title: "Operation", description: "Request attributes; fields are ANDed, values ORed" },
);

const Condition = Type.Object({
  key: Type.String({ description: "A documented condition key, e.g. request.headers[x-token]" }),
  values: Type.Optional(StringList("Matches when the attribute equals any value")),
  notValues: Type.Optional(StringList("Matches when the attribute equals no value")),
}, { ...closed, title: "Condition" });

const Rule = Type.Object({
  from: Type.Optional(Type.Array(Type.Object({ source: Source }, { ...closed, title: "RuleFrom" }))),
  to: Type.Optional(Type.Array(Type.Object({ operation: Operation }, { ...closed, title: "RuleTo" }))),
  when: Type.Optional(Type.Array(Condition)),
}, { ...closed, title: "Rule", description: "Matches when every present field matches" });

const AuthorizationPolicySpec = Type.Object({
  selector: Type.Optional(WorkloadSelector),
  targetRef: Type.Optional(PolicyTargetReference),
  targetRefs: Type.Optional(Type.Array(PolicyTargetReference)),
  rules: Type.Optional(Type.Array(Rule)),
  action: Type.Optional(StringEnum(AUTHORIZATION_ACTIONS, "What a matching request gets; default ALLOW")),
  provider: Type.Optional(
    Type.Object({ name: Type.String() }, {
      ...closed,
      title: "ExtensionProvider",
      description: "CUSTOM only",
    }),
  ),
}, { ...closed, title: "AuthorizationPolicySpec" });

/** AuthorizationPolicy: schema and Istio's rules. */
export const authorizationPolicy = defineKind({
  kind: "AuthorizationPolicy",
  group: "security",
  plural: "authorizationpolicies",
  schema: ResourceEnvelope("AuthorizationPolicy", AuthorizationPolicySpec),
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
