import assert from "node:assert/strict";
import { decodeEnvoy, encodeEnvoy, ENVOY_TYPES, envoyAny, envoyTypeUrl } from "./envoy_types.ts";

Deno.test("envoy types: a listener with a nested Any round-trips; enums by name", () => {
  const body = encodeEnvoy(ENVOY_TYPES.listener, {
    name: "a:80",
    apiListener: { apiListener: envoyAny(ENVOY_TYPES.hcm, { statPrefix: "a", codecType: "HTTP2" }) },
  });
  const l = decodeEnvoy(ENVOY_TYPES.listener, body) as {
    apiListener: { apiListener: { type_url: string; value: Uint8Array } };
  };
  assert.equal(l.apiListener.apiListener.type_url, envoyTypeUrl(ENVOY_TYPES.hcm));
  assert.deepEqual(decodeEnvoy(ENVOY_TYPES.hcm, l.apiListener.apiListener.value), {
    statPrefix: "a",
    codecType: "HTTP2",
  });
});

Deno.test("envoy types: a value of the wrong shape is an error naming the type", () => {
  assert.throws(
    () => encodeEnvoy(ENVOY_TYPES.cluster, { name: "c", edsClusterConfig: "not an object" }),
    /envoy\.config\.cluster\.v3\.Cluster: .*edsClusterConfig/,
  );
});
