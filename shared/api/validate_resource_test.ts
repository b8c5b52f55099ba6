import assert from "node:assert/strict";
import { peerAuthentication } from "./schemas/peer_authentication.ts";
import { validateResource } from "./validate_resource.ts";

Deno.test("schema errors: unknown field, enum, wrong type and the rule on portLevelMtls, all reported", () => {
  const f = validateResource(peerAuthentication, {
    apiVersion: "security.mesh.io/v1",
    kind: "PeerAuthentication",
    metadata: { name: "x", namespace: "foo" },
    spec: { mtls: { mode: "STRIKT" }, selektor: {}, portLevelMtls: { "80": { mode: 1 } } },
  });
  const got = f.map((x) => `${x.path.join(".")}: ${x.message}`);
  assert.deepEqual(got, [
    'spec.selektor: unknown field "selektor"',
    'spec.mtls.mode: must be one of UNSET, DISABLE, PERMISSIVE, STRICT; got the string "STRIKT"',
    "spec.portLevelMtls.80.mode: must be one of UNSET, DISABLE, PERMISSIVE, STRICT; got number 1",
    "spec.portLevelMtls: mesh-wide and namespace-wide PeerAuthentication cannot have portLevelMtls; " +
    "add selector.matchLabels",
  ]);
});
