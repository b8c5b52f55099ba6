/**
 * The TokenReview answer checks, table-driven: each refusal is a status a real API server could send
 * only if it were misconfigured or not Kubernetes (a webhook authenticator, an aggregated server),
 * so the test API server cannot produce them; tests/integration/meshd/pod_certificates_test.ts
 * covers the real reviews.
 */
import assert from "node:assert/strict";
import {
  judgeTokenReview,
  KubeTokenReviewer,
  type ReviewStatus,
  TOKEN_REVIEW_PATH,
  tokenUnfit,
} from "./token_review.ts";

const AUD = ["mesh-ca"];
const USER = {
  username: "system:serviceaccount:foo:sleep",
  groups: ["system:serviceaccounts", "system:serviceaccounts:foo", "system:authenticated"],
};
const GOOD: ReviewStatus = { authenticated: true, audiences: ["mesh-ca"], user: USER };

Deno.test("judgeTokenReview: an authenticated service account with our audience is its ns/sa", () => {
  assert.deepEqual(judgeTokenReview(GOOD, AUD, "cluster.local"), {
    ok: true,
    method: "k8s-jwt",
    identity: { trustDomain: "cluster.local", namespace: "foo", serviceAccount: "sleep" },
  });
  // Any one of TOKEN_AUDIENCES is enough.
  assert.equal(judgeTokenReview(GOOD, ["other", "mesh-ca"], "cluster.local").ok, true);
});

Deno.test("judgeTokenReview: every other answer is refused, with its reason", () => {
  const cases: [string, ReviewStatus, RegExp, boolean][] = [
    ["error set", { ...GOOD, error: "token expired" }, /refused it: token expired/, false],
    ["not authenticated", { ...GOOD, authenticated: false }, /did not authenticate/, false],
    ["authenticated missing", { audiences: ["mesh-ca"], user: USER }, /did not authenticate/, false],
    ["no audiences", { ...GOOD, audiences: undefined }, /audiences \[\] hold none of TOKEN_AUDIENCES/, false],
    [
      "the API server's audience only",
      { ...GOOD, audiences: ["https://kubernetes.default.svc.cluster.local"] },
      /hold none of TOKEN_AUDIENCES \["mesh-ca"\]/,
      false,
    ],
    [
      "not a service account (a user)",
      { ...GOOD, user: { username: "system:serviceaccount:foo:sleep", groups: ["system:authenticated"] } },
      /is not a service account/,
      true,
    ],
    [
      "username of a node",
      { ...GOOD, user: { ...USER, username: "system:node:n1" } },
      /is not system:serviceaccount:<ns>:<sa>/,
      true,
    ],
    [
      "username with five parts",
      { ...GOOD, user: { ...USER, username: "system:serviceaccount:foo:sleep:x" } },
      /is not system:serviceaccount/,
      true,
    ],
    [
      "namespace that is no DNS label",
      { ...GOOD, user: { ...USER, username: "system:serviceaccount:Foo/..:sleep" } },
      /is not system:serviceaccount/,
      true,
    ],
    ["no user", { authenticated: true, audiences: ["mesh-ca"] }, /is not a service account/, true],
  ];
  for (const [name, status, reason, idExtraction] of cases) {
    const r = judgeTokenReview(status, AUD, "cluster.local");
    assert.equal(r.ok, false, name);
    if (r.ok) continue;
    assert.match(r.reason, /^service-account token: /, name);
    assert.match(r.reason, reason, name);
    assert.equal(r.idExtraction, idExtraction, name);
  }
});

/** A JWT-shaped token for `aud` with `exp`, unsigned: only the API server (here: `answering`) verifies. */
function tokenExpiring(expSeconds: number, aud: unknown = "mesh-ca"): string {
  const b64 = (o: unknown) =>
    btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  return `${b64({ alg: "ES256" })}.${b64({ exp: expSeconds, aud, sub: "x" })}.sig`;
}

/** Answers every review with `status`, counting calls; the integration test uses the real API server. */
function answering(status: ReviewStatus): { api: { json<T>(): Promise<T> }; calls: unknown[] } {
  const calls: unknown[] = [];
  return {
    calls,
    api: {
      json<T>(...args: unknown[]): Promise<T> {
        calls.push(args);
        return Promise.resolve({ status } as T);
      },
    },
  };
}

Deno.test("KubeTokenReviewer: sends the token and TOKEN_AUDIENCES; caches a success up to its TTL and exp", async () => {
  let now = 1_000_000_000_000;
  const { api, calls } = answering(GOOD);
  const r = new KubeTokenReviewer({
    api,
    audiences: AUD,
    trustDomain: "td",
    cacheTtlMs: 30_000,
    now: () => now,
  });
  const token = tokenExpiring(now / 1000 + 10); // expires in 10 s: sooner than the cache TTL
  assert.equal((await r.review(token)).ok, true);
  assert.deepEqual(calls[0], [
    "POST",
    TOKEN_REVIEW_PATH,
    {
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, audiences: AUD } },
    },
  ]);
  now += 9_000;
  assert.equal((await r.review(token)).ok, true);
  assert.equal(calls.length, 1, "reviewed again inside the cache window");
  now += 2_000; // past the token's exp: the cache must not outlive the token
  assert.equal((await r.review(token)).ok, true);
  assert.equal(calls.length, 2, "a cached review outlived the token's exp");
});

Deno.test("KubeTokenReviewer: a refusal is never cached", async () => {
  const refused = answering({ authenticated: false, error: "invalid" });
  const r = new KubeTokenReviewer({ api: refused.api, audiences: AUD, trustDomain: "td" });
  const token = tokenExpiring(Date.now() / 1000 + 3600);
  assert.equal((await r.review(token)).ok, false);
  assert.equal((await r.review(token)).ok, false);
  assert.equal(refused.calls.length, 2);
});

Deno.test("KubeTokenReviewer: an API error is a refusal naming it", async () => {
  const api = { json: () => Promise.reject(new Error("POST /apis/...: 403 forbidden")) };
  const r = await new KubeTokenReviewer({ api, audiences: AUD, trustDomain: "td" })
    .review(tokenExpiring(Date.now() / 1000 + 600));
  assert.equal(r.ok, false);
  assert.match(
    (r as { reason: string }).reason,
    /^service-account token: the TokenReview failed: .*403 forbidden/,
  );
});

Deno.test("tokenUnfit: what cannot be a token for the CA never reaches the API server", async () => {
  const now = 1_000_000_000_000;
  const cases: [string, string, RegExp | undefined][] = [
    ["good", tokenExpiring(now / 1000 + 600), undefined],
    ["one of several audiences", tokenExpiring(now / 1000 + 600, ["x", "mesh-ca"]), undefined],
    ["expired 30 s ago: within the skew, the API server decides", tokenExpiring(now / 1000 - 30), undefined],
    ["not a JWT", "not-a-token", /^not a JWT \(/],
    ["three parts, no JSON", "a.b.c", /^not a JWT/],
    [
      "the API server's audience",
      tokenExpiring(now / 1000 + 600, "https://kubernetes.default.svc"),
      /^made for \["https:\/\/kubernetes.default.svc"\], none of TOKEN_AUDIENCES \["mesh-ca"\]$/,
    ],
    ["no audience (a legacy token)", tokenExpiring(now / 1000 + 600, null), /^made for \[\]/],
    ["audience of another type", tokenExpiring(now / 1000 + 600, 7), /^made for \[\]/],
    ["no exp", tokenExpiring(undefined as unknown as number), /^no exp claim/],
    ["expired 2 min ago", tokenExpiring(now / 1000 - 120), /^expired at /],
  ];
  for (const [name, token, reason] of cases) {
    const unfit = tokenUnfit(token, AUD, now);
    if (reason === undefined) assert.equal(unfit, undefined, name);
    else assert.match(unfit ?? "(accepted)", reason, name);
  }
  // And the reviewer refuses them without a request.
  const { api, calls } = answering(GOOD);
  const r = new KubeTokenReviewer({ api, audiences: AUD, trustDomain: "td", now: () => now });
  const refused = await r.review(tokenExpiring(now / 1000 + 600, "other"));
  assert.equal(refused.ok, false);
  assert.match((refused as { reason: string }).reason, /^service-account token: made for \["other"\]/);
  assert.equal((await r.review("garbage")).ok, false);
  assert.equal(calls.length, 0);
});
