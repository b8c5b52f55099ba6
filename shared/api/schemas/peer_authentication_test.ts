import assert from "node:assert/strict";
import { assertFindings, type ExpectedFinding as Expected } from "./_test_support.ts";
import { parse } from "yaml";
import { validateResource, type ValidateResourceOptions } from "../validate_resource.ts";
import { MTLS_MODES, peerAuthentication } from "./peer_authentication.ts";

interface Case {
  name: string;
  spec: unknown;
  /** metadata.namespace; default "foo". */
  namespace?: string;
  options?: ValidateResourceOptions;
  /** Every finding, exactly; [] means the resource is clean. */
  want: Expected[];
}

const err = (path: (string | number)[], message: string): Expected => ({ severity: "error", path, message });
const warn = (path: (string | number)[], message: string): Expected => ({
  severity: "warning",
  path,
  message,
});

function resource(spec: unknown, namespace = "foo"): unknown {
  return {
    apiVersion: "security.mesh.io/v1",
    kind: "PeerAuthentication",
    metadata: { name: "pa", namespace },
    spec,
  };
}

const APP = { matchLabels: { app: "httpbin" } };

const cases: Case[] = [
  // ---- spec basics
  { name: "spec {} is valid", spec: {}, want: [] },
  { name: "namespace-wide STRICT is valid", spec: { mtls: { mode: "STRICT" } }, want: [] },
  { name: "mtls {} without mode is valid (UNSET)", spec: { mtls: {} }, want: [] },

  // ---- mtls.mode enum (UNSET, DISABLE, PERMISSIVE, STRICT)
  ...MTLS_MODES.map((mode): Case => ({
    name: `mtls.mode enum: ${mode} passes`,
    spec: { selector: APP, mtls: { mode } },
    want: [],
  })),
  {
    name: "mtls.mode enum: STRIKT fails",
    spec: { mtls: { mode: "STRIKT" } },
    want: [
      err(
        ["spec", "mtls", "mode"],
        'must be one of UNSET, DISABLE, PERMISSIVE, STRICT; got the string "STRIKT"',
      ),
    ],
  },
  {
    name: "mtls.mode enum: lower-case strict fails (case-sensitive)",
    spec: { mtls: { mode: "strict" } },
    want: [err(["spec", "mtls", "mode"], "must be one of UNSET, DISABLE, PERMISSIVE, STRICT")],
  },
  {
    name: "mtls.mode enum: a number fails",
    spec: { mtls: { mode: 1 } },
    want: [err(["spec", "mtls", "mode"], "must be one of UNSET, DISABLE, PERMISSIVE, STRICT; got number 1")],
  },
  {
    name: "mtls.mode enum: portLevelMtls mode is checked too (map key stays a string in the path)",
    spec: { selector: APP, portLevelMtls: { "8080": { mode: "OFF" } } },
    want: [
      err(["spec", "portLevelMtls", "8080", "mode"], "must be one of UNSET, DISABLE, PERMISSIVE, STRICT"),
    ],
  },

  // ---- schema: wrong type, unknown field, envelope
  {
    name: "schema wrong type: mtls as a string fails",
    spec: { mtls: "STRICT" },
    want: [err(["spec", "mtls"], 'expected a map, got the string "STRICT"')],
  },
  {
    name: "schema wrong type: portLevelMtls as a list fails",
    spec: { selector: APP, portLevelMtls: [{ mode: "STRICT" }] },
    want: [err(["spec", "portLevelMtls"], "expected a map, got a list")],
  },
  {
    name: "schema wrong type: matchLabels value must be a string",
    spec: { selector: { matchLabels: { app: 1 } } },
    want: [err(["spec", "selector", "matchLabels", "app"], "expected a string, got number 1")],
  },
  {
    name: "schema unknown field: spec.selektor fails",
    spec: { selektor: { matchLabels: { app: "a" } } },
    want: [err(["spec", "selektor"], 'unknown field "selektor"')],
  },
  {
    name: "schema unknown field: mtls.strict fails",
    spec: { mtls: { mode: "STRICT", strict: true } },
    want: [err(["spec", "mtls", "strict"], 'unknown field "strict"')],
  },
  {
    name: "schema unknown field: a field inside a portLevelMtls entry fails",
    spec: { selector: APP, portLevelMtls: { "8080": { mode: "DISABLE", tls: true } } },
    want: [err(["spec", "portLevelMtls", "8080", "tls"], 'unknown field "tls"')],
  },
  {
    name: "schema unknown field: targetRef is not a PeerAuthentication field",
    spec: { targetRef: { kind: "Gateway", name: "gw" } },
    want: [err(["spec", "targetRef"], 'unknown field "targetRef"')],
  },

  // ---- portLevelMtls needs a selector
  {
    name: "portLevelMtls needs a selector: namespace-wide policy with portLevelMtls fails",
    spec: { mtls: { mode: "STRICT" }, portLevelMtls: { "8080": { mode: "DISABLE" } } },
    want: [err(["spec", "portLevelMtls"], "cannot have portLevelMtls; add selector.matchLabels")],
  },
  {
    name: "portLevelMtls needs a selector: a selector without labels does not count",
    spec: { selector: { matchLabels: {} }, portLevelMtls: { "8080": { mode: "DISABLE" } } },
    want: [
      err(["spec", "portLevelMtls"], "cannot have portLevelMtls"),
      warn(["spec", "selector"], "workload selector has no labels"),
    ],
  },
  {
    name: "portLevelMtls needs a selector: with selector.matchLabels passes",
    spec: { selector: APP, mtls: { mode: "STRICT" }, portLevelMtls: { "8080": { mode: "DISABLE" } } },
    want: [],
  },

  // ---- portLevelMtls ports are 1-65535
  ...["1", "80", "65535"].map((port): Case => ({
    name: `portLevelMtls port 1-65535: "${port}" passes`,
    spec: { selector: APP, portLevelMtls: { [port]: { mode: "PERMISSIVE" } } },
    want: [],
  })),
  ...["0", "65536", "-1", "http", "80.5", "1e3"].map((port): Case => ({
    name: `portLevelMtls port 1-65535: "${port}" fails`,
    spec: { selector: APP, portLevelMtls: { [port]: { mode: "PERMISSIVE" } } },
    want: [err(["spec", "portLevelMtls", port], `port must be a number in 1..65535, got "${port}"`)],
  })),
  {
    name: "portLevelMtls port 1-65535: every bad port is reported, good ones are not",
    spec: {
      selector: APP,
      portLevelMtls: { "0": { mode: "STRICT" }, "8080": {}, "70000": { mode: "STRICT" } },
    },
    want: [
      err(["spec", "portLevelMtls", "0"], 'got "0"'),
      err(["spec", "portLevelMtls", "70000"], 'got "70000"'),
    ],
  },

  // ---- empty portLevelMtls
  {
    name: "empty portLevelMtls: {} with a selector fails",
    spec: { selector: APP, portLevelMtls: {} },
    want: [err(["spec", "portLevelMtls"], "portLevelMtls, if present, must name at least one port")],
  },
  {
    name: "empty portLevelMtls: {} without a selector fails once (no selector error for zero ports)",
    spec: { portLevelMtls: {} },
    want: [err(["spec", "portLevelMtls"], "must name at least one port")],
  },

  // ---- a selector policy in the root namespace is ignored with a warning
  {
    name: "root namespace selector warning: selector in mesh-system (default root) warns",
    namespace: "mesh-system",
    spec: { selector: APP, mtls: { mode: "STRICT" } },
    want: [warn(["spec", "selector"], 'in the root namespace "mesh-system" is ignored')],
  },
  {
    name: "root namespace selector warning: mesh-wide policy (no selector) in mesh-system is clean",
    namespace: "mesh-system",
    spec: { mtls: { mode: "STRICT" } },
    want: [],
  },
  {
    name: "root namespace selector warning: selector in another namespace is clean",
    namespace: "istio-system",
    spec: { selector: APP, mtls: { mode: "STRICT" } },
    want: [],
  },
  {
    name: "root namespace selector warning: custom rootNamespace istio-system warns there",
    namespace: "istio-system",
    options: { rootNamespace: "istio-system" },
    spec: { selector: APP, mtls: { mode: "STRICT" } },
    want: [warn(["spec", "selector"], 'in the root namespace "istio-system" is ignored')],
  },
  {
    name: "root namespace selector warning: custom rootNamespace, mesh-system is an ordinary namespace",
    namespace: "mesh-system",
    options: { rootNamespace: "istio-system" },
    spec: { selector: APP, mtls: { mode: "STRICT" } },
    want: [],
  },
  {
    name:
      "root namespace selector warning: selector with port-level mTLS in the root namespace warns, no error",
    namespace: "mesh-system",
    spec: { selector: APP, portLevelMtls: { "8080": { mode: "DISABLE" } } },
    want: [warn(["spec", "selector"], "is ignored")],
  },
  {
    name:
      "root namespace selector warning: an empty selector in the root namespace only gets the no-labels warning",
    namespace: "mesh-system",
    spec: { selector: {}, mtls: { mode: "STRICT" } },
    want: [warn(["spec", "selector"], "workload selector has no labels")],
  },

  // ---- workload selector rules
  {
    name: "selector empty key fails",
    spec: { selector: { matchLabels: { "": "x" } } },
    want: [err(["spec", "selector", "matchLabels", ""], "empty label key is not allowed")],
  },
  {
    name: "selector wildcard in key fails",
    spec: { selector: { matchLabels: { "app*": "x" } } },
    want: [
      err(["spec", "selector", "matchLabels", "app*"], 'wildcards are not supported in selectors: "app*=x"'),
    ],
  },
  {
    name: "selector wildcard in value fails",
    spec: { selector: { matchLabels: { app: "http*" } } },
    want: [err(["spec", "selector", "matchLabels", "app"], "wildcards are not supported in selectors")],
  },
  {
    name: "selector without labels warns: selector {}",
    spec: { selector: {} },
    want: [warn(["spec", "selector"], "selects every workload in scope")],
  },
  {
    name: "selector without labels warns: matchLabels {}",
    spec: { selector: { matchLabels: {} }, mtls: { mode: "PERMISSIVE" } },
    want: [warn(["spec", "selector"], "workload selector has no labels")],
  },
];

for (const c of cases) {
  Deno.test(`PeerAuthentication: ${c.name}`, () => {
    assertFindings(validateResource(peerAuthentication, resource(c.spec, c.namespace), c.options), c.want);
  });
}

Deno.test("PeerAuthentication: schema required field: metadata.name missing fails", () => {
  const r = { apiVersion: "security.mesh.io/v1", kind: "PeerAuthentication", metadata: {}, spec: {} };
  assertFindings(validateResource(peerAuthentication, r), [
    err(["metadata", "name"], "required field is missing"),
  ]);
});

Deno.test("PeerAuthentication: schema unknown field at the top level fails", () => {
  const r = { ...(resource({}) as object), specs: {} };
  assertFindings(validateResource(peerAuthentication, r), [err(["specs"], 'unknown field "specs"')]);
});

interface FixtureCase {
  file: string;
  options?: ValidateResourceOptions;
}

const FIXTURES = new URL("../../../tests/fixtures/istio/", import.meta.url);

const fixtures: FixtureCase[] = [
  { file: "authn-policy/01_peer_authentication_strict_mesh_istio_system.yaml" },
  {
    file: "authn-policy/01_peer_authentication_strict_mesh_istio_system.yaml",
    options: { rootNamespace: "istio-system" },
  },
  { file: "authn-policy/02_peer_authentication_strict_namespace_foo.yaml" },
  { file: "authn-policy/03_peer_authentication_workload_httpbin_bar_strict.yaml" },
  { file: "authn-policy/04_peer_authentication_workload_httpbin_bar_port_level_mtls.yaml" },
  { file: "authn-policy/05_peer_authentication_overwrite_example_foo_disable.yaml" },
  { file: "mtls-migration/01_peer_authentication_strict_foo.yaml" },
  { file: "mtls-migration/02_peer_authentication_strict_mesh_istio_system.yaml" },
];

for (const c of fixtures) {
  const root = c.options?.rootNamespace ? ` (rootNamespace ${c.options.rootNamespace})` : "";
  Deno.test(`PeerAuthentication: Istio fixture ${c.file}${root} yields no findings`, async () => {
    const doc = parse(await Deno.readTextFile(new URL(c.file, FIXTURES)));
    assert.equal(doc.kind, "PeerAuthentication");
    assertFindings(validateResource(peerAuthentication, doc, c.options), []);
  });
}
