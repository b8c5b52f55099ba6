import assert from "node:assert/strict";
import {
  DEFAULT_TRUST_DOMAIN,
  formatSpiffeId,
  parseSpiffeId,
  principalOf,
  type SpiffeId,
  SpiffeIdError,
  type SpiffeIdErrorReason,
  type SpiffeIdInput,
  tryParseSpiffeId,
} from "./mod.ts";

const GOOD: { uri: string; id: SpiffeId }[] = [
  {
    uri: "spiffe://cluster.local/ns/default/sa/sleep",
    id: { trustDomain: "cluster.local", namespace: "default", serviceAccount: "sleep" },
  },
  {
    uri: "spiffe://example.org/ns/foo/sa/httpbin",
    id: { trustDomain: "example.org", namespace: "foo", serviceAccount: "httpbin" },
  },
  {
    uri: "spiffe://td_1-x.corp/ns/a.b-c_d/sa/Svc-Account.1",
    id: { trustDomain: "td_1-x.corp", namespace: "a.b-c_d", serviceAccount: "Svc-Account.1" },
  },
  {
    uri: "spiffe://a/ns/b/sa/c",
    id: { trustDomain: "a", namespace: "b", serviceAccount: "c" },
  },
  {
    // The longest trust domain allowed, 255 bytes.
    uri: `spiffe://${"t".repeat(255)}/ns/n/sa/s`,
    id: { trustDomain: "t".repeat(255), namespace: "n", serviceAccount: "s" },
  },
  {
    // Exactly 2048 bytes: 9 (scheme) + 1 + 4 ("/ns/") + 1 + 4 ("/sa/") = 19, plus 2029.
    uri: `spiffe://t/ns/n/sa/${"s".repeat(2029)}`,
    id: { trustDomain: "t", namespace: "n", serviceAccount: "s".repeat(2029) },
  },
];

for (const { uri, id } of GOOD) {
  Deno.test(`parse and format round-trip: ${uri.slice(0, 60)}`, () => {
    assert.deepEqual(parseSpiffeId(uri), id);
    assert.deepEqual(tryParseSpiffeId(uri), id);
    assert.equal(formatSpiffeId(id), uri);
    assert.equal(principalOf(id), uri.slice("spiffe://".length));
    assert.deepEqual(parseSpiffeId(formatSpiffeId(id)), id);
  });
}

const BAD: { uri: string; reason: SpiffeIdErrorReason; message: RegExp }[] = [
  { uri: "", reason: "empty", message: /empty/ },
  { uri: `spiffe://t/ns/n/sa/${"s".repeat(2030)}`, reason: "too_long", message: /2049 bytes.*2048/ },
  { uri: "cluster.local/ns/default/sa/sleep", reason: "wrong_scheme", message: /no scheme/ },
  { uri: "https://cluster.local/ns/default/sa/sleep", reason: "wrong_scheme", message: /scheme "https"/ },
  { uri: "SPIFFE://cluster.local/ns/default/sa/sleep", reason: "wrong_scheme", message: /scheme "SPIFFE"/ },
  { uri: "spiffe:/cluster.local/ns/default/sa/sleep", reason: "wrong_scheme", message: /spiffe:\/\// },
  { uri: "spiffe://cluster.local/ns/default/sa/sleep?x=1", reason: "query_or_fragment", message: /query/ },
  {
    uri: "spiffe://cluster.local/ns/default/sa/sleep#frag",
    reason: "query_or_fragment",
    message: /fragment/,
  },
  { uri: "spiffe://", reason: "missing_trust_domain", message: /trust domain is missing/ },
  {
    uri: "spiffe:///ns/default/sa/sleep",
    reason: "missing_trust_domain",
    message: /trust domain is missing/,
  },
  {
    uri: `spiffe://${"t".repeat(256)}/ns/n/sa/s`,
    reason: "trust_domain_too_long",
    message: /256 bytes.*255/,
  },
  { uri: "spiffe://Cluster.Local/ns/default/sa/sleep", reason: "invalid_trust_domain", message: /lowercase/ },
  { uri: "spiffe://cluster.local:8080/ns/d/sa/s", reason: "invalid_trust_domain", message: /port/ },
  { uri: "spiffe://user@cluster.local/ns/d/sa/s", reason: "invalid_trust_domain", message: /userinfo/ },
  { uri: "spiffe://clüster.local/ns/d/sa/s", reason: "invalid_trust_domain", message: /lowercase letters/ },
  { uri: "spiffe://cluster.local", reason: "missing_segment", message: /path is missing/ },
  { uri: "spiffe://cluster.local/ns", reason: "missing_segment", message: /namespace is missing/ },
  {
    uri: "spiffe://cluster.local/ns/default",
    reason: "missing_segment",
    message: /service account is missing/,
  },
  {
    uri: "spiffe://cluster.local/ns/default/sa",
    reason: "missing_segment",
    message: /service account is missing/,
  },
  { uri: "spiffe://cluster.local/", reason: "empty_segment", message: /must not end with "\/"/ },
  { uri: "spiffe://cluster.local/ns//sa/sleep", reason: "empty_segment", message: /namespace is empty/ },
  {
    uri: "spiffe://cluster.local/ns/default/sa/",
    reason: "empty_segment",
    message: /service account is empty/,
  },
  { uri: "spiffe://cluster.local/ns/default/sa/sleep/", reason: "empty_segment", message: /must not end/ },
  { uri: "spiffe://cluster.local//ns/default/sa/sleep", reason: "empty_segment", message: /"\/\/"/ },
  {
    uri: "spiffe://cluster.local/workload/sleep",
    reason: "wrong_path_shape",
    message: /starts with "\/workload"/,
  },
  {
    uri: "spiffe://cluster.local/ns/default/svc/sleep",
    reason: "wrong_path_shape",
    message: /"\/svc" follows/,
  },
  {
    uri: "spiffe://cluster.local/sa/sleep/ns/default",
    reason: "wrong_path_shape",
    message: /starts with "\/sa"/,
  },
  { uri: "spiffe://cluster.local/ns/default/sa/sleep/x", reason: "wrong_path_shape", message: /extra "\/x"/ },
  { uri: "spiffe://cluster.local/ns/../sa/sleep", reason: "invalid_segment", message: /namespace "\.\."/ },
  { uri: "spiffe://cluster.local/ns/./sa/sleep", reason: "invalid_segment", message: /namespace "\."/ },
  {
    uri: "spiffe://cluster.local/ns/default/sa/sl%65ep",
    reason: "invalid_segment",
    message: /service account/,
  },
  { uri: "spiffe://cluster.local/ns/déf/sa/sleep", reason: "invalid_segment", message: /namespace "déf"/ },
];

for (const { uri, reason, message } of BAD) {
  Deno.test(`parse rejects (${reason}): ${uri.slice(0, 60) || "<empty>"}`, () => {
    assert.throws(() => parseSpiffeId(uri), (e: unknown) => {
      assert.ok(e instanceof SpiffeIdError);
      assert.equal(e.name, "SpiffeIdError");
      assert.equal(e.reason, reason);
      assert.match(e.message, message);
      return true;
    });
    assert.equal(tryParseSpiffeId(uri), undefined);
  });
}

Deno.test("format defaults the trust domain to cluster.local", () => {
  assert.equal(DEFAULT_TRUST_DOMAIN, "cluster.local");
  assert.equal(
    formatSpiffeId({ namespace: "default", serviceAccount: "sleep" }),
    "spiffe://cluster.local/ns/default/sa/sleep",
  );
  assert.equal(principalOf({ namespace: "foo", serviceAccount: "bar" }), "cluster.local/ns/foo/sa/bar");
});

const BAD_INPUT: { input: SpiffeIdInput; reason: SpiffeIdErrorReason }[] = [
  { input: { namespace: "", serviceAccount: "s" }, reason: "empty_segment" },
  { input: { namespace: "n", serviceAccount: "" }, reason: "empty_segment" },
  { input: { namespace: "a/b", serviceAccount: "s" }, reason: "invalid_segment" },
  { input: { namespace: "n", serviceAccount: ".." }, reason: "invalid_segment" },
  { input: { trustDomain: "", namespace: "n", serviceAccount: "s" }, reason: "missing_trust_domain" },
  {
    input: { trustDomain: "Example.org", namespace: "n", serviceAccount: "s" },
    reason: "invalid_trust_domain",
  },
  {
    input: { trustDomain: "t".repeat(256), namespace: "n", serviceAccount: "s" },
    reason: "trust_domain_too_long",
  },
  { input: { namespace: "n", serviceAccount: "s".repeat(2048) }, reason: "too_long" },
];

for (const { input, reason } of BAD_INPUT) {
  Deno.test(`format and principalOf reject (${reason}): ${JSON.stringify(input).slice(0, 60)}`, () => {
    for (const f of [formatSpiffeId, principalOf]) {
      assert.throws(() => f(input), (e: unknown) => e instanceof SpiffeIdError && e.reason === reason);
    }
  });
}

Deno.test("tryParseSpiffeId rethrows what is not a SpiffeIdError", () => {
  assert.throws(() => tryParseSpiffeId(undefined as unknown as string), TypeError);
});
