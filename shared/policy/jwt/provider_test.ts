import assert from "node:assert/strict";
import { applicableRequestAuthentications } from "./provider.ts";

Deno.test("applicableRequestAuthentications: selected policies in order, providers with jwks defaulted", () => {
  const ra = (namespace: string, name: string, spec: Record<string, unknown>) => ({
    metadata: { namespace, name },
    spec,
  });
  const got = applicableRequestAuthentications([
    ra("foo", "b", { jwtRules: [{ issuer: "i2", jwksUri: "https://x/jwks" }] }),
    ra("foo", "a", {
      selector: { matchLabels: { app: "httpbin" } },
      jwtRules: [{ issuer: "i1", jwks: "{}" }],
    }),
    ra("foo", "other", { selector: { matchLabels: { app: "other" } }, jwtRules: [{ issuer: "i3" }] }),
    ra("bar", "c", { jwtRules: [{ issuer: "i4" }] }),
  ], { namespace: "foo", labels: { app: "httpbin" } });
  assert.deepEqual(got, [
    { namespace: "foo", name: "a", providers: [{ issuer: "i1", jwks: "{}" }] },
    { namespace: "foo", name: "b", providers: [{ issuer: "i2", jwksUri: "https://x/jwks", jwks: "" }] },
  ]);
});
