/** The proxy keeps the last good key set of a provider until a newer good one arrives, whoever fetched. */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair } from "jose";
import { KeptKeySets, keySetSourceOf } from "./kept_keys.ts";

async function keySet(kid: string): Promise<string> {
  const { publicKey } = await generateKeyPair("ES256", { extractable: true });
  return JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: "ES256" }] });
}
const S1 = await keySet("k1");
const S2 = await keySet("k2");
const URI = "https://idp.example/keys";
const OTHER = "https://other.example/keys";

/** One push of meshd: a JwtPolicy with one provider. */
const meshd = (jwks: string, extra: Record<string, unknown> = {}) => ({
  "foo/jwt": { providers: [{ issuer: "i", jwks, jwksUri: URI, ...extra }] },
});
const proxy = () => meshd("", { jwksFetcher: "PROXY" });

type Step = [
  what: string,
  policies: ReturnType<typeof meshd>,
  fetched: Record<string, string>,
  /** The set in force for URI, or undefined. */
  want: string | undefined,
  /** The reason logged for keeping an older set, or undefined. */
  kept?: string,
];

const scenarios: [string, Step[]][] = [
  ["meshd restarts while the JWKS server is down: its key-less push keeps the proxy's set", [
    ["meshd pushes S1", meshd(S1), {}, S1],
    ["meshd restarted, no fetch yet", meshd(""), {}, S1, "Jwks is not available yet"],
    ["meshd's fetch succeeds again with S2", meshd(S2), {}, S2],
  ]],
  ["a key set that does not parse never replaces a good one", [
    ["S1", meshd(S1), {}, S1],
    ["not JSON", meshd("{"), {}, S1, "Jwks is not valid JSON"],
    ["no keys list", meshd('{"a":1}'), {}, S1, "Jwks has no keys"],
    [
      "only a symmetric key",
      meshd('{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}'),
      {},
      S1,
      "Jwks has no public RSA, EC or OKP key",
    ],
  ]],
  ["no good set ever: nothing in force", [
    ["key-less", meshd(""), {}, undefined],
    ["then S1", meshd(S1), {}, S1],
  ]],
  ["the proxy fetches: its last good fetch stays while it has none", [
    ["first fetch S1", proxy(), { [URI]: S1 }, S1],
    ["the fetcher lost its source (restarted agent)", proxy(), {}, S1, "Jwks is not available yet"],
    ["fetch S2", proxy(), { [URI]: S2 }, S2],
  ]],
  [
    "whoever fetches: meshd's set survives a switch to the proxy fetching, the proxy's first fetch replaces it",
    [
      ["meshd S1", meshd(S1), {}, S1],
      ["now the proxy fetches, nothing yet", proxy(), {}, S1, "Jwks is not available yet"],
      ["the proxy fetched S2", proxy(), { [URI]: S2 }, S2],
      ["back to meshd, restarted without keys", meshd(""), {}, S2, "Jwks is not available yet"],
      ["meshd fetched again: its S1 is the newest word", meshd(S1), {}, S1],
    ],
  ],
  ["a provider gone from the config is forgotten", [
    ["S1", meshd(S1), {}, S1],
    ["another source only", meshd(S2, { jwksUri: OTHER }), {}, undefined],
    ["back, key-less", meshd(""), {}, undefined],
  ]],
];

for (const [name, steps] of scenarios) {
  Deno.test(`KeptKeySets: ${name}`, () => {
    const kept = new KeptKeySets();
    for (const [what, policies, fetched, want, reason] of steps) {
      const r = kept.update(policies, new Map(Object.entries(fetched)));
      assert.equal(r.keys[URI], want, what);
      assert.deepEqual(r.kept.map((k) => k.reason), reason === undefined ? [] : [reason], what);
    }
  });
}

Deno.test("keySetSourceOf: the jwksUri, or the issuer without one", () => {
  assert.equal(keySetSourceOf({ issuer: "i", jwksUri: URI }), URI);
  assert.equal(keySetSourceOf({ issuer: "i", jwksUri: "" }), "issuer:i");
});
