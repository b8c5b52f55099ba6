import assert from "node:assert/strict";
import {
  ENV_VARS,
  ENV_VARS_IN_EFFECT,
  inertVariableWarnings,
  type MeshdEnvironment,
  readEnvironment,
} from "./environment.ts";
import { DEFAULT_REGISTRY, type EnvVar } from "./env/env_var.ts";

Deno.test("environment: the seed's 177 variables, each once, with every default valid", () => {
  assert.equal(ENV_VARS.length, 177);
  assert.equal(new Set(ENV_VARS.map((v) => v.name)).size, 177);
  const r = readEnvironment({});
  assert.deepEqual(r.errors, []);
  for (const v of ENV_VARS) {
    const value = r.env[v.name];
    if (v.default === undefined) assert.equal(value, undefined, v.name);
    else {assert.equal(
        typeof value,
        { bool: "boolean", string: "string" }[v.type as string] ?? "number",
        v.name,
      );}
  }
});

Deno.test("environment: the variables in effect are all in the table", () => {
  const names = new Set<string>(ENV_VARS.map((v) => v.name));
  for (const n of ENV_VARS_IN_EFFECT) assert.ok(names.has(n), n);
  assert.equal(ENV_VARS_IN_EFFECT.length, 44);
  // Logged "in effect" before, but read by nothing (issue 13).
  for (const n of ["MESH_DELTA_XDS", "CA_TRUSTED_NODE_ACCOUNTS"]) {
    assert.ok(!(ENV_VARS_IN_EFFECT as readonly string[]).includes(n), n);
  }
});

Deno.test("environment: every variable without effect says why, and warns once when set", () => {
  for (const v of ENV_VARS as readonly EnvVar[]) {
    assert.equal(
      v.noEffect === undefined,
      (ENV_VARS_IN_EFFECT as readonly string[]).includes(v.name),
      v.name,
    );
  }
  const r = readEnvironment({ CLUSTER_ID: "c1", PLATFORM: "gcp", XDS_AUTH: "false", ENABLE_AUTO_SNI: "" });
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.warnings, [
    "environment variable PLATFORM is set but has no effect yet: meshd reads no platform or cloud metadata",
  ]);
  assert.deepEqual(inertVariableWarnings({}), []);
});

Deno.test("a cache setting set while DISCO_ENABLE_XDS_CACHE is false warns, and not while it is true", () => {
  const set = { DISCO_XDS_CACHE_SIZE: "5", DISCO_XDS_CACHE_STATS: "true", DISCO_ENABLE_CDS_CACHE: "" };
  assert.deepEqual(readEnvironment({ ...set, DISCO_ENABLE_XDS_CACHE: "false" }).warnings, [
    "environment variable DISCO_XDS_CACHE_SIZE is set but has no effect: DISCO_ENABLE_XDS_CACHE is false",
    "environment variable DISCO_XDS_CACHE_STATS is set but has no effect: DISCO_ENABLE_XDS_CACHE is false",
  ]);
  assert.deepEqual(readEnvironment(set).warnings, []);
});

const fixedValues: [string, string, string][] = [
  ["COMPLIANCE_POLICY", "fips-140-3", "fips-140-2"],
  ["EXTERNAL_CA", "ISTIOD_RA_KUBERNETES_API", "MESHD_RA_ORCH_API"],
  ["PLATFORM", "aws", "openshift, gcp"],
  ["CLOUD_PLATFORM", "GCP", "aws, azure, gcp, none"],
  ["INBOUND_INTERCEPTION_MODE", "redirect", "REDIRECT, TPROXY"],
  ["MESH_ORCH_CLIENT_CONTENT_TYPE", "yaml", "protobuf, json"],
];
for (const [name, bad, accepted] of fixedValues) {
  Deno.test(`environment: ${name} takes only its seed's values`, () => {
    const spec = (ENV_VARS as readonly EnvVar[]).find((v) => v.name === name)!;
    for (const good of spec.values!) assert.deepEqual(readEnvironment({ [name]: good }).errors, [], good);
    assert.deepEqual(readEnvironment({ [name]: "" }).errors, [], "empty is unset");
    assert.deepEqual(readEnvironment({ [name]: bad }).errors, [
      `environment variable ${name}: ${bad} is not accepted; use ${accepted}`,
    ]);
  });
}

Deno.test("environment: typed defaults, durations in milliseconds", () => {
  const env: MeshdEnvironment = readEnvironment({}).env;
  const expected: Partial<Record<keyof MeshdEnvironment, unknown>> = {
    DISCO_DEBOUNCE_AFTER: 100,
    DISCO_DEBOUNCE_MAX: 10_000,
    DISCO_PUSH_THROTTLE: 0,
    MESH_GPRC_MAXSTREAMS: 100_000,
    MESH_GPRC_MAXRECVMSGSIZE: 4_194_304,
    XDS_AUTH: true,
    CA_SELF_SIGNED_CA_CERT_TTL: 87_600 * 3_600_000,
    CA_SELF_SIGNED_CA_RSA_KEY_SIZE: 2048,
    CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL: 3_600_000,
    CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE: 20,
    CA_TRUSTED_NODE_ACCOUNTS: undefined,
    DEFAULT_WORKLOAD_CERT_TTL: 24 * 3_600_000,
    MAX_WORKLOAD_CERT_TTL: 2160 * 3_600_000,
    TOKEN_AUDIENCES: "mesh-ca",
    ROOT_CA_DIR: "./etc/cacerts",
    ENABLE_CA_SERVER: true,
    ENABLE_DEBUG_ON_HTTP: true,
    METRICS_LOCALHOST_ACCESS_ONLY: false,
    MESH_DELTA_XDS: true,
    DISCO_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION: true,
    DISCO_WORKLOAD_ENTRY_GRACE_PERIOD: 10_000,
    DISCO_TRACE_SAMPLING: 1,
    CLUSTER_ID: DEFAULT_REGISTRY,
    POD_NAMESPACE: "mesh-system",
    DISCO_GATEWAY_API_CONTROLLER_NAME: "mesh.io/gateway-controller",
    METRIC_ROTATION_INTERVAL: 0,
    AUDIENCE: undefined,
  };
  for (const [name, value] of Object.entries(expected)) {
    assert.equal(env[name as keyof MeshdEnvironment], value, name);
  }
  // The type carries each variable's type: these lines do not compile if it does not.
  const debounce: number = env.DISCO_DEBOUNCE_AFTER;
  const audience: string | undefined = env.AUDIENCE;
  const auth: boolean = env.XDS_AUTH;
  assert.ok(debounce > 0 && audience === undefined && auth);
});

const good: { vars: Record<string, string>; name: keyof MeshdEnvironment; want: unknown }[] = [
  { vars: { XDS_AUTH: "false" }, name: "XDS_AUTH", want: false },
  { vars: { XDS_AUTH: "0" }, name: "XDS_AUTH", want: false },
  { vars: { ENABLE_CA_SERVER: "F" }, name: "ENABLE_CA_SERVER", want: false },
  { vars: { METRICS_LOCALHOST_ACCESS_ONLY: "1" }, name: "METRICS_LOCALHOST_ACCESS_ONLY", want: true },
  { vars: { METRICS_LOCALHOST_ACCESS_ONLY: "True" }, name: "METRICS_LOCALHOST_ACCESS_ONLY", want: true },
  { vars: { DISCO_DEBOUNCE_AFTER: "1m30s" }, name: "DISCO_DEBOUNCE_AFTER", want: 90_000 },
  { vars: { DISCO_DEBOUNCE_AFTER: "1.5ms" }, name: "DISCO_DEBOUNCE_AFTER", want: 1.5 },
  { vars: { DISCO_DEBOUNCE_MAX: "0" }, name: "DISCO_DEBOUNCE_MAX", want: 0 },
  { vars: { MESH_GPRC_MAXSTREAMS: "+42" }, name: "MESH_GPRC_MAXSTREAMS", want: 42 },
  { vars: { DISCO_TRACE_SAMPLING: "12.5" }, name: "DISCO_TRACE_SAMPLING", want: 12.5 },
  { vars: { DISCO_TRACE_SAMPLING: "1e1" }, name: "DISCO_TRACE_SAMPLING", want: 10 },
  { vars: { TOKEN_AUDIENCES: "a,b" }, name: "TOKEN_AUDIENCES", want: "a,b" },
  { vars: { TOKEN_AUDIENCES: "" }, name: "TOKEN_AUDIENCES", want: "" },
  { vars: { XDS_AUTH: "" }, name: "XDS_AUTH", want: true },
  { vars: { DISCO_PUSH_THROTTLE: "" }, name: "DISCO_PUSH_THROTTLE", want: 0 },
  {
    vars: { CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL: "-1s" },
    name: "CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL",
    want: -1000,
  },
];
for (const c of good) {
  Deno.test(`environment: ${JSON.stringify(c.vars)} gives ${c.name}=${c.want}`, () => {
    const r = readEnvironment(c.vars);
    assert.deepEqual(r.errors, []);
    assert.equal(r.env[c.name], c.want);
  });
}

const bad: { name: string; value: string; error: RegExp }[] = [
  {
    name: "DISCO_DEBOUNCE_AFTER",
    value: "100",
    error: /^environment variable DISCO_DEBOUNCE_AFTER: 100 is not a duration: missing unit; use Go syntax/,
  },
  {
    name: "DISCO_DEBOUNCE_MAX",
    value: "ten seconds",
    error: /DISCO_DEBOUNCE_MAX: "ten seconds" is not a duration;/,
  },
  { name: "DISCO_WORKLOAD_ENTRY_GRACE_PERIOD", value: "1x", error: /: 1x is not a duration; use Go syntax/ },
  {
    name: "MAX_WORKLOAD_CERT_TTL",
    value: "2562048h",
    error: /: 2562048h is out of range; the largest duration/,
  },
  { name: "DISCO_DEBOUNCE_AFTER", value: "-1s", error: /: -1s is below the minimum 0ms$/ },
  {
    name: "XDS_AUTH",
    value: "yes",
    error: /^environment variable XDS_AUTH: yes is not a boolean; use true or false/,
  },
  { name: "MESH_DELTA_XDS", value: "TRue", error: /MESH_DELTA_XDS: TRue is not a boolean/ },
  { name: "MESH_GPRC_MAXSTREAMS", value: "1e5", error: /MESH_GPRC_MAXSTREAMS: 1e5 is not an integer$/ },
  {
    name: "MESH_GPRC_MAXSTREAMS",
    value: "0",
    error: /MESH_GPRC_MAXSTREAMS: 0 is out of range 1..4294967295$/,
  },
  { name: "MESH_GPRC_MAXRECVMSGSIZE", value: "4 MiB", error: /: "4 MiB" is not an integer$/ },
  { name: "DISCO_PUSH_THROTTLE", value: "-1", error: /DISCO_PUSH_THROTTLE: -1 is below the minimum 0$/ },
  {
    name: "DISCO_PUSH_THROTTLE",
    value: "99999999999999999999",
    error: /is out of range -9007199254740991\.\./,
  },
  {
    name: "CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE",
    value: "120",
    error: /: 120 is out of range 0..100$/,
  },
  { name: "DISCO_TRACE_SAMPLING", value: "NaN", error: /DISCO_TRACE_SAMPLING: NaN is not a decimal number/ },
  { name: "DISCO_TRACE_SAMPLING", value: "1e999", error: /: 1e999 is out of range$/ },
];
for (const c of bad) {
  Deno.test(`environment: ${c.name}=${c.value} is an error`, () => {
    const r = readEnvironment({ [c.name]: c.value });
    assert.equal(r.errors.length, 1, r.errors.join("\n"));
    assert.match(r.errors[0], c.error);
    const spec = ENV_VARS.find((v) => v.name === c.name)!;
    assert.equal(
      r.env[c.name as keyof MeshdEnvironment],
      readEnvironment({}).env[spec.name],
      "keeps the default",
    );
  });
}

Deno.test("environment: every bad variable is reported, not only the first", () => {
  const r = readEnvironment({
    XDS_AUTH: "maybe",
    DISCO_DEBOUNCE_AFTER: "soon",
    MESH_GPRC_MAXSTREAMS: "many",
    AUDIENCE: "x",
  });
  assert.deepEqual(
    new Set(r.errors.map((e) => e.split(":")[0])),
    new Set(
      ["XDS_AUTH", "DISCO_DEBOUNCE_AFTER", "MESH_GPRC_MAXSTREAMS"].map((n) => `environment variable ${n}`),
    ),
  );
  assert.equal(r.errors.length, 3);
});

Deno.test("environment: a default certificate TTL above the maximum is an error", () => {
  const r = readEnvironment({ DEFAULT_WORKLOAD_CERT_TTL: "48h", MAX_WORKLOAD_CERT_TTL: "24h" });
  assert.deepEqual(r.errors, [
    "environment variables DEFAULT_WORKLOAD_CERT_TTL and MAX_WORKLOAD_CERT_TTL: the default 48h is above the maximum 24h",
  ]);
});

Deno.test("environment: DISCO_JWT_ENABLE_REMOTE_JWKS takes Istio's values and the mesh's, nothing else", () => {
  for (const value of ["false", "meshd", "istiod", "true", "hybrid", "proxy", "envoy"]) {
    assert.deepEqual(readEnvironment({ DISCO_JWT_ENABLE_REMOTE_JWKS: value }).errors, [], value);
  }
  const r = readEnvironment({ DISCO_JWT_ENABLE_REMOTE_JWKS: "remote" });
  assert.deepEqual(r.errors, [
    'environment variable DISCO_JWT_ENABLE_REMOTE_JWKS: "remote" is not one of false, meshd, istiod, true, hybrid, proxy, envoy',
  ]);
  assert.equal(r.env.DISCO_JWT_ENABLE_REMOTE_JWKS, "false");
});

Deno.test("environment: reads Deno.env by default", () => {
  Deno.env.set("DISCO_PUSH_THROTTLE", "7");
  try {
    assert.equal(readEnvironment().env.DISCO_PUSH_THROTTLE, 7);
  } finally {
    Deno.env.delete("DISCO_PUSH_THROTTLE");
  }
});
