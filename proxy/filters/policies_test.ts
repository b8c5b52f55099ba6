/** The compiled policies of a snapshot: providers the proxy fetches get the keys of its own fetch. */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { EMPTY_SNAPSHOT, type RuntimeSnapshot } from "../runtime/snapshot.ts";
import { inboundPoliciesOf } from "./policies.ts";

Deno.test("inboundPoliciesOf: a PROXY provider uses snapshot.jwks[jwksUri]; none yet: its tokens are refused", async () => {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const keys = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" }] });
  const token = await new SignJWT({ iss: "i", sub: "u", exp: Math.floor(Date.now() / 1000) + 60 })
    .setProtectedHeader({ alg: "ES256", kid: "k1" })
    .sign(privateKey);
  const uri = "http://jwks.idp.svc.cluster.local/keys";
  const jwtPolicies = {
    "foo/jwt": {
      name: "jwt",
      namespace: "foo",
      providers: [{ issuer: "i", jwks: "", jwksUri: uri, jwksFetcher: "PROXY" }],
    },
  };
  const verify = (snapshot: RuntimeSnapshot) =>
    inboundPoliciesOf(snapshot).authn!.authenticate({
      headers: { authorization: `Bearer ${token}` },
      path: "/",
    });
  const before = await verify({ ...EMPTY_SNAPSHOT, jwtPolicies });
  assert.deepEqual([before.status, (before as { reason?: string }).reason], [
    "invalid",
    "Jwt verification fails: Jwks is not available yet",
  ]);
  const after = await verify({ ...EMPTY_SNAPSHOT, jwtPolicies, jwks: { [uri]: keys } });
  assert.equal(after.status, "valid");
  // A provider meshd fetched keeps the keys it carries, whatever the proxy fetched.
  const meshd = {
    ...EMPTY_SNAPSHOT,
    jwtPolicies: { "foo/jwt": { providers: [{ issuer: "i", jwks: keys, jwksUri: uri }] } },
  };
  assert.equal((await verify({ ...meshd, jwks: { [uri]: '{"keys":[]}' } })).status, "valid");
});
