import assert from "node:assert/strict";
import { peerAuthentication } from "./schemas/peer_authentication.ts";
import { validateResource } from "./validate_resource.ts";

Deno.test("schema errors: unknown field, enum, wrong type, all reported", () => {
  const f = validateResource(peerAuthentication, {
    apiVersion: "security.mesh.io/v1",
    kind: "PeerAuthentication",
    metadata: { name: "x", namespace: "foo" },
    spec: { mtls: { mode: "STRIKT" }, selektor: {}, portLevelMtls: { "80": { mode: 1 } } },
  });
  const got = f.map((x) => `${x.path.join(".")}: ${x.message}`);
  console.log(got);
  assert.ok(got.length >= 3);
});
