/**
 * Bugs planted in the L4 (TCP) authorization semantics: HTTP-only fields no longer recognized, ALLOW
 * rules with them kept, DENY rules keeping their HTTP-only parts, the default action's effect, and a
 * connection evaluated with the HTTP rules or without its peer identity.
 *
 * @module
 */
import { type Mutant, mutant } from "./mutant.ts";

const TESTS = ["shared/policy/authorization/tcp_rules_test.ts"];
const DIR = "shared/policy/authorization";
const rules = mutant("authorization_tcp", `${DIR}/tcp_rules.ts`, TESTS);
const evaluate = mutant("authorization_tcp", `${DIR}/evaluate.ts`, TESTS);

/** The L4 semantics' mutants. */
export const TCP_AUTHORIZATION_MUTANTS: readonly Mutant[] = [
  rules(
    "requestPrincipals are L4",
    'const HTTP_SOURCE_FIELDS = ["requestPrincipals", "notRequestPrincipals"] as const;',
    'const HTTP_SOURCE_FIELDS = ["notRequestPrincipals"] as const;',
  ),
  rules(
    "notRequestPrincipals are L4",
    'const HTTP_SOURCE_FIELDS = ["requestPrincipals", "notRequestPrincipals"] as const;',
    'const HTTP_SOURCE_FIELDS = ["requestPrincipals"] as const;',
  ),
  rules("methods are L4", '"methods", "notMethods"', '"notMethods"'),
  rules("notMethods are L4", '"methods", "notMethods"', '"methods"'),
  rules("paths are L4", '"paths", "notPaths"', '"notPaths"'),
  rules("hosts are L4", '["hosts", "notHosts",', '["notHosts",'),
  rules(
    "request.auth.* conditions are L4",
    'return key.startsWith("request.");',
    'return key.startsWith("request.headers");',
  ),
  rules(
    "the default action (ALLOW) ignores instead of dropping",
    'return (action || "ALLOW") === "ALLOW" ? "dropped" : "ignored";',
    'return action === "ALLOW" ? "dropped" : "ignored";',
  ),
  evaluate(
    "ALLOW rules with HTTP-only fields kept on TCP",
    'if (tcpRuleEffect(action) === "dropped") return droppedOnTcp.push(index);',
    'if (tcpRuleEffect(action) === "dropped") return tcpRules.push(rules[index]);',
  ),
  evaluate(
    "DENY rules keep their HTTP-only fields on TCP",
    "const l4 = withoutHttpOnlyFields(rule);",
    "const l4 = rule;",
  ),
  evaluate(
    "a connection is evaluated with the HTTP rules",
    'const rulesOf = layer === "http" ? (c: CompiledPolicy) => c.rules : (c: CompiledPolicy) => c.tcpRules;',
    "const rulesOf = (c: CompiledPolicy) => c.rules;",
  ),
  evaluate(
    "a connection's peer identity is not read",
    'principal: connection.sourcePrincipal ?? "",',
    'principal: "",',
  ),
];
