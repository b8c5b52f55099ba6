import assert from "node:assert/strict";
import { formatIssue, validateText } from "../../shared/mod.ts";
import { parseAdmissionReview } from "./admission.ts";
import { issueText, validateAdmission } from "./validation.ts";
import { admissionReview, INVALID_POLICY } from "./test_support.ts";

const AP_KIND = { group: "security.istio.io", version: "v1", kind: "AuthorizationPolicy" };

function request(object: Record<string, unknown>, kind = AP_KIND, operation = "CREATE") {
  return parseAdmissionReview(admissionReview(object, kind, { name: "deny-all", operation }));
}

Deno.test("validateAdmission: an invalid AuthorizationPolicy is refused with meshctl validate's resource, field and reason", () => {
  const out = validateAdmission(request(INVALID_POLICY), "mesh-system");
  assert.equal(out.result, "failed");
  assert.equal(out.decision.allowed, false);
  // What meshctl validate prints for the same object, less its file and line.
  const cli = validateText(JSON.stringify(INVALID_POLICY), "x.yaml").issues.filter((i) =>
    i.severity === "error"
  );
  assert.ok(cli.length > 0);
  assert.equal(out.decision.message, `configuration is invalid: ${cli.map(issueText).join("; ")}`);
  assert.ok(formatIssue(cli[0]).endsWith(issueText(cli[0])), formatIssue(cli[0]));
  assert.match(out.decision.message!, /AuthorizationPolicy foo\/deny-all: spec\.action: /);
});

Deno.test("validateAdmission: a valid policy passes; other kinds and deletes are allowed untouched", () => {
  const valid = {
    ...INVALID_POLICY,
    spec: { action: "DENY", rules: [{ from: [{ source: { namespaces: ["bar"] } }] }] },
  };
  assert.deepEqual(validateAdmission(request(valid), "mesh-system").result, "passed");
  const deployment = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d" }, spec: {} };
  const other = validateAdmission(
    request(deployment, { group: "apps", version: "v1", kind: "Deployment" }),
    "mesh-system",
  );
  assert.deepEqual([other.result, other.decision.allowed], ["ignored", true]);
  const del = validateAdmission(request(INVALID_POLICY, AP_KIND, "DELETE"), "mesh-system");
  assert.deepEqual([del.result, del.decision.allowed], ["ignored", true]);
});
