import assert from "node:assert/strict";
import { DEFAULT_PROXY_SETTINGS, proxySettingsOf } from "./mod.ts";

Deno.test("absent fields take the defaults", () => {
  assert.deepEqual(proxySettingsOf({}, "settings"), DEFAULT_PROXY_SETTINGS);
  assert.deepEqual(proxySettingsOf({ pathNormalization: "" }, "settings"), DEFAULT_PROXY_SETTINGS);
});

Deno.test("set fields are kept", () => {
  assert.deepEqual(
    proxySettingsOf({ pathNormalization: "MERGE_SLASHES", numTrustedProxies: 2 }, "settings"),
    { ...DEFAULT_PROXY_SETTINGS, pathNormalization: "MERGE_SLASHES", numTrustedProxies: 2 },
  );
  assert.equal(DEFAULT_PROXY_SETTINGS.outboundTrafficPolicy, "ALLOW_ANY");
  assert.equal(
    proxySettingsOf({ outboundTrafficPolicy: "REGISTRY_ONLY" }, "settings").outboundTrafficPolicy,
    "REGISTRY_ONLY",
  );
});

const bad: [Record<string, unknown>, RegExp][] = [
  [
    { pathNormalization: "merge_slashes" },
    /^Error: x\.pathNormalization: "merge_slashes" is not one of NONE, BASE/,
  ],
  [{ pathNormalization: 1 }, /^Error: x\.pathNormalization: 1 is not one of/],
  [{ numTrustedProxies: -1 }, /^Error: x\.numTrustedProxies: -1 is not a whole number from 0 to 255/],
  [{ numTrustedProxies: 1.5 }, /^Error: x\.numTrustedProxies: 1.5 is not/],
  [{ numTrustedProxies: "2" }, /^Error: x\.numTrustedProxies: "2" is not/],
  [
    { outboundTrafficPolicy: "registry_only" },
    /^Error: x\.outboundTrafficPolicy: "registry_only" is not one of ALLOW_ANY, REGISTRY_ONLY$/,
  ],
];
for (const [value, message] of bad) {
  Deno.test(`bad settings are an error naming the field: ${JSON.stringify(value)}`, () => {
    assert.throws(() => proxySettingsOf(value, "x"), message);
  });
}

Deno.test("denialExplanation is checked with the settings", () => {
  const d = { principals: ["cluster.local/ns/mesh-system/*"], ipBlocks: ["127.0.0.1"] };
  assert.deepEqual(proxySettingsOf({ denialExplanation: d }, "settings").denialExplanation, d);
  assert.throws(
    () => proxySettingsOf({ denialExplanation: { ipBlocks: ["x"] } }, "settings"),
    /^Error: settings\.denialExplanation\.ipBlocks\[0\]: "x" is not an IP address or CIDR block$/,
  );
});
