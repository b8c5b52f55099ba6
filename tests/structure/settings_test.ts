/**
 * Settings tell the truth (issue 13): every setting listed as in effect has a reader, found by its
 * typed field name in the programs' source (not in the tables that declare the settings, not in
 * tests); every setting marked without effect has none, so that implementing one means flipping its
 * mark. Covers meshd's environment variables and `discovery` flags, proxy's flags and meshctl's
 * common flags. Behaviour checks run beside the code: meshd/cli_discovery_test.ts (warnings, the
 * effective environment logged), meshctl/cli_test.ts (`options`, warnings).
 *
 * @module
 */
import assert from "node:assert/strict";
import { DISCOVERY_FLAGS } from "../../meshd/options/discovery_flag_table.ts";
import { ENV_VARS, ENV_VARS_IN_EFFECT } from "../../meshd/options/environment.ts";
import { type EnvVar } from "../../meshd/options/env/env_var.ts";
import { PROXY_FLAGS } from "../../proxy/options/flags.ts";
import { buildProgram } from "../../meshctl/cli.ts";
import { noEffectReason } from "../../meshctl/inert_flags.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/**
 * The declarations and validators of settings: they name every setting, so a name found there is
 * not a reader.
 */
const DECLARATIONS = [
  "meshd/options/env/",
  "meshd/options/environment.ts",
  "meshd/options/discovery_flag_table.ts",
  "meshd/options/discovery_flags.ts",
  "meshd/options/flag_reader.ts",
  "proxy/options/",
];

/** The source of the programs, by path: no tests, no test support, no settings declarations. */
async function programSources(): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const visit = async (dir: string): Promise<void> => {
    for await (const e of Deno.readDir(`${ROOT}${dir}`)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await visit(path);
      else if (!path.endsWith(".ts") || /_test\.ts$|test_support/.test(path)) continue;
      else if (!DECLARATIONS.some((d) => path.startsWith(d))) {
        files.set(path, await Deno.readTextFile(`${ROOT}${path}`));
      }
    }
  };
  for (const dir of ["meshd", "proxy", "meshctl", "shared"]) await visit(dir);
  return files;
}

const sources = await programSources();

/** The files where `pattern` matches, for the assertion messages. */
function readers(pattern: RegExp, within: (path: string) => boolean = () => true): string[] {
  return [...sources].filter(([path, text]) => within(path) && pattern.test(text)).map(([path]) => path);
}

/** meshd's environment is read as the typed `env: MeshdEnvironment`. */
function envReaders(name: string): string[] {
  return readers(new RegExp(`\\benv\\.${name}\\b`), (p) => p.startsWith("meshd/"));
}

/** The field of `DiscoveryOptions` (or of its `log`) a meshd flag becomes. */
function discoveryField(flag: { name: string; type: string }): string {
  const log: Record<string, string> = {
    log_as_json: "asJson",
    log_caller: "callers",
    log_output_level: "outputLevels",
    log_stacktrace_level: "stacktraceLevels",
    log_target: "targets",
  };
  if (log[flag.name]) return log[flag.name];
  const camel = flag.name.replace(/[-_]([a-z])/g, (_, c: string) => c.toUpperCase());
  return flag.type === "duration" ? `${camel}Ms` : camel;
}

/** meshd reads its validated flags as `options.<field>` (discovery.ts, logging) or `flags.options`. */
function meshdFlagReaders(flag: { name: string; type: string }): string[] {
  return readers(new RegExp(`\\boptions\\.${discoveryField(flag)}\\b`), (p) => p.startsWith("meshd/"));
}

Deno.test("settings: every meshd variable in effect is read through the typed environment", () => {
  for (const name of ENV_VARS_IN_EFFECT) {
    // POD_NAMESPACE is the default of --namespace; its reader is the flag's.
    const viaFlag = DISCOVERY_FLAGS.filter((f) => f.envDefault === name && f.effect === "now");
    const found = [...envReaders(name), ...viaFlag.flatMap(meshdFlagReaders)];
    assert.ok(found.length > 0, `${name} is listed as in effect, but nothing reads env.${name}`);
  }
});

Deno.test("settings: no meshd variable without effect is read", () => {
  for (const v of ENV_VARS as readonly EnvVar[]) {
    if (v.noEffect === undefined) continue;
    assert.deepEqual(envReaders(v.name), [], `${v.name} is marked without effect, but is read`);
  }
});

Deno.test("settings: every meshd discovery flag in effect is read, and none without effect is", () => {
  for (const f of DISCOVERY_FLAGS) {
    const found = meshdFlagReaders(f);
    if (f.effect === "now") {
      assert.ok(found.length > 0, `--${f.name}: nothing reads options.${discoveryField(f)}`);
    } else assert.deepEqual(found, [], `--${f.name} is marked without effect, but is read`);
  }
});

/** The field of `ProxyOptions` (or of its `connectionLimits`) a proxy flag becomes. */
const PROXY_FIELDS: Readonly<Record<string, string>> = {
  controlPlaneAuthPolicy: "plaintext",
  instanceName: "nodeName",
  workloadEntry: "nodeName",
  "proxy-admin-port": "adminPort",
  proxyLogLevel: "logLevels",
  proxyComponentLogLevel: "logLevels",
  requestHeadersTimeout: "requestHeadersTimeoutMs",
  requestTimeout: "requestTimeoutMs",
  idleTimeout: "idleTimeoutMs",
};

Deno.test("settings: every proxy flag in effect is read, and none without effect is", () => {
  for (const f of PROXY_FLAGS) {
    const field = PROXY_FIELDS[f.name] ?? f.name;
    // run.ts reads the validated options as `o`; the listeners read the limits as `connLimits`.
    const found = readers(
      new RegExp(`\\b(o|connLimits|limits)\\.${field}\\b`),
      (p) => p.startsWith("proxy/"),
    );
    if (f.noEffect === undefined) assert.ok(found.length > 0, `--${f.name}: nothing reads ${field}`);
    else assert.deepEqual(found, [], `--${f.name} is marked without effect, but is read`);
  }
});

Deno.test("settings: every meshctl common flag in effect is read, and none without effect is", () => {
  const program = buildProgram({ stdout: () => {}, stderr: () => {}, setExitCode: () => {} });
  for (const o of program.options) {
    const field = o.attributeName();
    const found = readers(
      new RegExp(`(\\bglobals|\\bopts|\\boptions|\\))\\.${field}\\b`),
      (p) => p.startsWith("meshctl/"),
    );
    if (noEffectReason(o.description) === undefined) {
      assert.ok(found.length > 0, `${o.long}: nothing reads ${field}`);
    } else assert.deepEqual(found, [], `${o.long} is marked without effect, but is read`);
  }
});

Deno.test("settings: the check fails for a setting nothing reads", () => {
  assert.deepEqual(envReaders("NOT_A_SETTING"), []);
  // Logged as in effect until issue 13, and read by nothing.
  for (const name of ["CLUSTER_ID", "MESH_DELTA_XDS", "CA_TRUSTED_NODE_ACCOUNTS"]) {
    assert.deepEqual(envReaders(name), [], name);
  }
  assert.ok(envReaders("XDS_AUTH").includes("meshd/discovery.ts"));
});
