import assert from "node:assert/strict";
import type { AuthorizationRuleView } from "../../shared/mod.ts";
import { ruleSummary } from "./format.ts";

Deno.test("ruleSummary: from, to and when in one line", () => {
  const cases: [AuthorizationRuleView, string][] = [
    [{}, "any request"],
    [{ to: [{ operation: { methods: ["GET"] } }] }, "to: methods=[GET]"],
    [
      {
        from: [{ source: { principals: ["a", "b"] } }, { source: { notNamespaces: ["x"] } }],
        to: [{ operation: { paths: ["/ip"], ports: null } }],
      },
      "from: principals=[a,b] | notNamespaces=[x]; to: paths=[/ip]",
    ],
    [
      {
        when: [{ key: "request.headers[x-token]", notValues: ["admin"] }, {
          key: "source.ip",
          values: ["10.0.0.0/8"],
        }],
      },
      "when: request.headers[x-token] notValues=[admin], source.ip values=[10.0.0.0/8]",
    ],
  ];
  for (const [rule, want] of cases) assert.equal(ruleSummary(rule), want);
});
