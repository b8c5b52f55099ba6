/**
 * Rows that peer_authentication_test.ts lacked, found by the mutation check (tests/mutation/run.ts):
 * each pins a rule that a planted bug broke without any test failing.
 */
import assert from "node:assert/strict";
import { effectivePeerAuthentication, type PeerAuthenticationPolicy } from "./mod.ts";

const options = (
  policies: PeerAuthenticationPolicy[],
  labels: Record<string, string> = { app: "httpbin" },
) => ({
  namespace: "foo",
  labels,
  port: 8000,
  portBoundToService: true,
  policies,
});
const namespaceStrict: PeerAuthenticationPolicy = {
  metadata: { namespace: "foo", name: "default" },
  spec: { mtls: { mode: "STRICT" }, portLevelMtls: { "8000": { mode: "DISABLE" } } },
};
const workloadDisable: PeerAuthenticationPolicy = {
  metadata: { namespace: "foo", name: "httpbin" },
  spec: { selector: { matchLabels: { app: "httpbin" } }, mtls: { mode: "DISABLE" } },
};

Deno.test("effectivePeerAuthentication: portLevelMtls of a namespace-wide policy is ignored", () => {
  const r = effectivePeerAuthentication(options([namespaceStrict]));
  assert.equal(r.mode, "STRICT");
  assert.deepEqual(r.decidedBy, { scope: "namespace", policy: { namespace: "foo", name: "default" } });
});

Deno.test("effectivePeerAuthentication: a label inherited from the labels' prototype does not select", () => {
  const inherited = Object.create({ app: "httpbin" }) as Record<string, string>;
  assert.equal(
    effectivePeerAuthentication(options([namespaceStrict, workloadDisable], inherited)).mode,
    "STRICT",
  );
  assert.equal(effectivePeerAuthentication(options([namespaceStrict, workloadDisable])).mode, "DISABLE");
});

for (const ts of ["2024-01-01", "Jan 1 2024", "2024-01-01 00:00:00Z", "2024-01-01T00:00Z"]) {
  Deno.test(`effectivePeerAuthentication refuses creationTimestamp ${ts}, which Date.parse accepts`, () => {
    const p = { ...namespaceStrict, metadata: { ...namespaceStrict.metadata, creationTimestamp: ts } };
    assert.throws(
      () => effectivePeerAuthentication(options([p])),
      (e: unknown) => e instanceof RangeError && e.message.includes("is not an RFC 3339 time"),
    );
  });
}

Deno.test("effectivePeerAuthentication accepts RFC 3339 timestamps with fractions and offsets", () => {
  for (const ts of ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00.123Z", "2024-01-01T02:00:00+02:00"]) {
    const p = { ...namespaceStrict, metadata: { ...namespaceStrict.metadata, creationTimestamp: ts } };
    assert.equal(effectivePeerAuthentication(options([p])).mode, "STRICT");
  }
});
