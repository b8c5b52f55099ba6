import assert from "node:assert/strict";
import { applySets, buildSpec, installResourceSpecs, overlay, setPath, setValue } from "./profile.ts";

Deno.test("--set paths: dots split segments, backslash-escaped dots stay in a segment, spec. is optional", () => {
  const table: [string, string[]][] = [
    ["profile", ["profile"]],
    ["components.ingressGateway.enabled", ["components", "ingressGateway", "enabled"]],
    ["meshConfig.defaultConfig.proxyMetadata.A\\.B", ["meshConfig", "defaultConfig", "proxyMetadata", "A.B"]],
    ["spec.revision", ["revision"]],
  ];
  for (const [path, want] of table) assert.deepEqual(setPath(path), want, path);
  assert.throws(() => setPath("a..b"), /--set a\.\.b: empty path segment/);
  assert.throws(() => setPath("components.ingressGateways[0].enabled"), /list indexes are not supported/);
  assert.deepEqual([setValue("true"), setValue("false"), setValue("3"), setValue("x")], [
    true,
    false,
    3,
    "x",
  ]);
  assert.throws(() => applySets({}, ["profile"]), /--set profile: expected path=value/);
});

Deno.test("overlay: maps merge left to right, lists and scalars replace", () => {
  assert.deepEqual(
    overlay({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, d: 2 }),
    { a: { b: 1, c: [3] }, d: 2 },
  );
});

Deno.test("profiles: which components each enables, and the user's overlay on top", () => {
  const enabled = (user: Record<string, unknown>) => {
    const { spec, problems } = buildSpec(user, "");
    assert.deepEqual(problems.errors, []);
    return Object.entries(spec.components).filter(([, c]) => c.enabled).map(([n]) => n);
  };
  assert.deepEqual(enabled({}), ["base", "meshd", "ingressGateway"]);
  assert.deepEqual(enabled({ profile: "minimal" }), ["base", "meshd"]);
  assert.deepEqual(enabled({ profile: "demo" }), ["base", "meshd", "ingressGateway"]);
  assert.deepEqual(enabled({ profile: "empty" }), []);
  assert.deepEqual(enabled(applySets({ profile: "minimal" }, ["components.ingressGateway.enabled=true"])), [
    "base",
    "meshd",
    "ingressGateway",
  ]);
  assert.deepEqual(enabled({ components: { pilot: { enabled: false } } }), ["base", "ingressGateway"]);
  assert.equal(buildSpec({ profile: "demo" }, "").spec.components.meshd.replicas, 1);
});

Deno.test("invalid install resources: each error names the field and why", () => {
  const errors = (user: Record<string, unknown>, rev = "") => buildSpec(user, rev).problems.errors;
  assert.deepEqual(errors({ profile: "huge" }), [
    "spec.profile: unknown profile huge (known: default, minimal, demo, empty)",
  ]);
  assert.deepEqual(errors({ components: { cni: { enabled: true } } }), [
    "spec.components.cni: unknown component (known: base, meshd, ingressGateway, pilot)",
  ]);
  assert.deepEqual(errors({ colour: 1 }), ["spec.colour: unknown field"]);
  assert.deepEqual(errors({ components: { meshd: { enabled: "yes" } } }), [
    "spec.components.meshd.enabled: must be a boolean",
  ]);
  assert.deepEqual(errors({}, "Canary"), ["spec.revision: Canary is not a DNS label"]);
  assert.deepEqual(buildSpec({ values: {} }, "").problems.warnings, [
    "spec.values: has no effect (meshctl has no chart values)",
  ]);
  assert.equal(buildSpec({ revision: "default" }, "").spec.revision, "", "default is the default revision");
});

Deno.test("install resource files: MeshOperator or IstioOperator specs; anything else is refused by name", () => {
  const text = "apiVersion: install.istio.io/v1alpha1\nkind: IstioOperator\nspec:\n  profile: demo\n";
  assert.deepEqual(installResourceSpecs(text, "a.yaml"), [{ profile: "demo" }]);
  assert.throws(
    () => installResourceSpecs("kind: ConfigMap\n", "b.yaml"),
    /b\.yaml: document 1: kind: expected MeshOperator \(or IstioOperator\), got ConfigMap/,
  );
});
