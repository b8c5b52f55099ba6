import assert from "node:assert/strict";
import {
  collectionPath,
  documentOf,
  isCredentialSecret,
  objectName,
  validateObject,
  WATCHED_RESOURCES,
  type WatchedResource,
} from "./resources.ts";

const PA: WatchedResource = {
  apiVersion: "security.istio.io/v1",
  kind: "PeerAuthentication",
  plural: "peerauthentications",
};
const SECRET: WatchedResource = { apiVersion: "v1", kind: "Secret", plural: "secrets" };

Deno.test("watched: every kind in the mesh's group and Istio's v1, and Secrets", () => {
  const names = WATCHED_RESOURCES.map((r) => `${r.apiVersion} ${r.plural}`);
  for (
    const want of [
      "security.mesh.io/v1 peerauthentications",
      "security.istio.io/v1 peerauthentications",
      "security.mesh.io/v1 authorizationpolicies",
      "security.istio.io/v1 authorizationpolicies",
      "networking.mesh.io/v1 gateways",
      "networking.istio.io/v1 virtualservices",
      "networking.mesh.io/v1 workloadgroups",
      "v1 secrets",
    ]
  ) assert.ok(names.includes(want), want);
  assert.equal(WATCHED_RESOURCES.length, 8 * 2 + 1);
  assert.ok(WATCHED_RESOURCES.every((r) => r.plural !== undefined), "every kind has a plural");
});

Deno.test("paths: cluster-wide, one namespace, core group", () => {
  assert.equal(collectionPath(PA), "/apis/security.istio.io/v1/peerauthentications");
  assert.equal(collectionPath(PA, "foo"), "/apis/security.istio.io/v1/namespaces/foo/peerauthentications");
  assert.equal(collectionPath(SECRET, "foo"), "/api/v1/namespaces/foo/secrets");
  assert.equal(objectName(PA, "foo", "bar"), "kubernetes:peerauthentications.security.istio.io/foo/bar");
  assert.equal(objectName(SECRET, "foo", "bar"), "kubernetes:secrets/foo/bar");
});

Deno.test("secrets: only gateway credentials are config", () => {
  const cases: [unknown, unknown, boolean][] = [
    ["kubernetes.io/tls", {}, true],
    ["Opaque", { cert: "x", key: "y" }, true],
    ["Opaque", { cacert: "x" }, true],
    [undefined, { "ca.crt": "x" }, true],
    ["Opaque", { password: "x" }, false],
    ["kubernetes.io/service-account-token", { "ca.crt": "x" }, false],
    ["helm.sh/release.v1", { release: "x" }, false],
    ["Opaque", undefined, false],
  ];
  for (const [type, data, want] of cases) {
    assert.equal(isCredentialSecret({ type, data }), want, `${type} ${JSON.stringify(data)}`);
  }
});

Deno.test("document: apiVersion and kind of the watched type, server-set fields and status left out", () => {
  const doc = documentOf(PA, {
    metadata: {
      name: "p",
      namespace: "foo",
      labels: { a: "b" },
      // Server-set fields a real API server returns: none reaches the validator.
      ...{ uid: "u", resourceVersion: "7", managedFields: [{}], creationTimestamp: new Date(0) },
    },
    spec: { mtls: { mode: "STRICT" } },
    ...{ status: { validationMessages: [] } },
  });
  assert.deepEqual(doc, {
    apiVersion: "security.istio.io/v1",
    kind: "PeerAuthentication",
    metadata: { name: "p", namespace: "foo", labels: { a: "b" } },
    spec: { mtls: { mode: "STRICT" } },
  });
});

Deno.test("validate: an invalid object is an error naming the object and the field, without a line", () => {
  const name = objectName(PA, "foo", "p");
  const bad = validateObject(
    PA,
    { metadata: { name: "p", namespace: "foo" }, spec: { mtls: { mode: "STRICTEST" } } },
    name,
    undefined,
  );
  assert.equal(bad.resources.length, 0);
  assert.equal(bad.issues.length, 1);
  const [issue] = bad.issues;
  assert.equal(issue.file, name);
  assert.equal(issue.field, "spec.mtls.mode");
  assert.equal(issue.resource, "PeerAuthentication foo/p");
  assert.equal(issue.line, undefined);
  assert.equal(issue.documentIndex, undefined);
  assert.match(issue.message, /STRICT/);
  const good = validateObject(
    PA,
    { metadata: { name: "p", namespace: "foo" }, spec: { mtls: { mode: "STRICT" } } },
    name,
    undefined,
  );
  assert.deepEqual(good.issues, []);
  assert.equal(good.resources[0].resource.kind, "PeerAuthentication");
  assert.equal(good.resources[0].resource.apiVersion, "security.istio.io/v1");
});
