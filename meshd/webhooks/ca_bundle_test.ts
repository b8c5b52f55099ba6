import assert from "node:assert/strict";
import { configPath, withCaBundle } from "./ca_bundle.ts";

Deno.test("withCaBundle: sets every webhook's caBundle, reports no change when all have it", () => {
  const config = {
    webhooks: [{ name: "a", clientConfig: { caBundle: "old" } }, { name: "b", clientConfig: {} }],
  };
  const next = withCaBundle(config, "new")!;
  assert.deepEqual(next.webhooks, [{ name: "a", clientConfig: { caBundle: "new" } }, {
    name: "b",
    clientConfig: { caBundle: "new" },
  }]);
  assert.equal(config.webhooks[0].clientConfig.caBundle, "old", "the input is not changed");
  assert.equal(withCaBundle(next, "new"), undefined);
  assert.equal(withCaBundle({}, "new"), undefined);
});

Deno.test("withCaBundle: a webhook without clientConfig is an error naming it", () => {
  assert.throws(
    () => withCaBundle({ webhooks: [{ clientConfig: {} }, { name: "x" }] }, "b"),
    /^Error: webhooks\[1\]\.clientConfig: required$/,
  );
  assert.throws(() => withCaBundle({ webhooks: {} }, "b"), /^Error: webhooks: must be a list$/);
});

Deno.test("configPath: the admissionregistration.k8s.io/v1 collections", () => {
  assert.equal(
    configPath({ kind: "mutating", name: "mesh-sidecar-injector" }),
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/mesh-sidecar-injector",
  );
  assert.equal(
    configPath({ kind: "validating", name: "a/b" }),
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/a%2Fb",
  );
});
