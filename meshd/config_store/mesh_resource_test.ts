import assert from "node:assert/strict";
import { validateText } from "../../shared/mod.ts";
import { b64, makeTestCa } from "../../shared/credentials/_test_support.ts";
import { meshResourceOf } from "./mesh_resource.ts";

Deno.test("meshResourceOf types what validateText accepted by its kind", async () => {
  const { ca } = await makeTestCa();
  const { resources, issues } = validateText(
    `apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: foo}
spec: {mtls: {mode: STRICT}}
---
apiVersion: v1
kind: Secret
metadata: {name: empty, namespace: foo}
type: Opaque
data: {ca.crt: ${b64(ca.certPem)}}
`,
    "x.yaml",
  );
  assert.deepEqual(issues, []);
  const [pa, secret] = resources.map((r) => meshResourceOf(r.resource));
  assert.equal(pa.kind === "PeerAuthentication" && pa.spec.mtls?.mode, "STRICT");
  assert.equal(secret.kind, "Secret");
});

Deno.test("meshResourceOf refuses a kind that validateText never accepts, naming it", () => {
  assert.throws(
    () => meshResourceOf({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web" }, spec: {} }),
    /Deployment web: not a kind the config store keeps/,
  );
});
