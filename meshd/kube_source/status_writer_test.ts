import assert from "node:assert/strict";
import { statusPath, validationMessages } from "./status_writer.ts";
import { validateObject, WATCHED_RESOURCES } from "./resources.ts";

const AP = WATCHED_RESOURCES.find((r) =>
  r.kind === "AuthorizationPolicy" && r.apiVersion === "security.mesh.io/v1"
)!;
const NAME = "kubernetes:authorizationpolicies.security.mesh.io/foo/p";
const objectWith = (spec: unknown) => ({ metadata: { name: "p", namespace: "foo" }, spec });

Deno.test("validationMessages: one ERROR per error, with the field and the log line's text; none for a valid object", () => {
  const bad = validateObject(AP, objectWith({ action: "MAYBE", rules: [{}] }), NAME, "mesh-system");
  assert.deepEqual(validationMessages({ result: bad }), [{
    type: { code: "IST0106", name: "SchemaValidationError" },
    level: "ERROR",
    documentationUrl: "https://istio.io/latest/docs/reference/config/analysis/ist0106/",
    field: "spec.action",
    message: `${NAME}: AuthorizationPolicy foo/p: spec.action: must be one of ALLOW, DENY, AUDIT, CUSTOM; ` +
      'got the string "MAYBE"',
  }]);
  const good = validateObject(AP, objectWith({ action: "ALLOW", rules: [{}] }), NAME, "mesh-system");
  assert.deepEqual(validationMessages({ result: good }), []);
  assert.deepEqual(validationMessages({ result: undefined }), []);
});

Deno.test("statusPath: the object's status subresource", () => {
  assert.equal(
    statusPath(AP, "foo", "a b"),
    "/apis/security.mesh.io/v1/namespaces/foo/authorizationpolicies/a%20b/status",
  );
});
