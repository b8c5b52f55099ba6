/**
 * The flags of `meshd discovery` (meshd seed, "`meshd discovery` flags", "Listening addresses" and
 * the cipher suite lists): one table with each flag's pflag type, default, description and whether
 * it takes effect yet; the commander options built from it; and the validation of the parsed values
 * into {@link DiscoveryOptions}.
 *
 * Commander keeps every value as the text given; this module parses it the way Go's pflag does
 * (ints in Go syntax with 0x/0o/0b prefixes, durations as time.ParseDuration, bools as
 * strconv.ParseBool), so that all errors are found in one pass and each names the flag, the value
 * and the reason.
 *
 * @module
 */
import { type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { collectArray, collectStrings } from "../../meshctl/options.ts";
import { type LogOptions, parseLogOptions } from "../logging/mod.ts";
import {
  DEFAULT_REGISTRY,
  type EnvVarName,
  type MeshdEnvironment,
  parseDecimal,
  parseGoBool,
  parseGoDuration,
  safeInteger,
  showValue,
  type ValueResult,
} from "./environment.ts";

/** The pflag value types of the seed's table (`Level` is klog's verbosity, an int32). */
export type PflagType =
  | "string"
  | "stringToString"
  | "uint16"
  | "duration"
  | "int"
  | "float32"
  | "bool"
  | "stringArray"
  | "stringSlice"
  | "Level";

/** One row of the seed's flag table. */
export interface DiscoveryFlag {
  /** The long name, without `--`. */
  readonly name: string;
  /** The one-letter short name, without `-`. */
  readonly short?: string;
  /** How the value is parsed, as pflag's type of the same name does. */
  readonly type: PflagType;
  /** The default as pflag would parse it: text, or the items of a list type. */
  readonly default: string | readonly string[];
  /** When the flag is not given, this variable's value (when set) replaces the default. */
  readonly envDefault?: EnvVarName;
  /** The seed's description. */
  readonly description: string;
  /** Whether meshd uses the value in this release; `--help` says "no effect yet" otherwise. */
  readonly effect: "now" | "no effect yet";
  /** Why a flag has no effect yet, for `--help`. */
  readonly reason?: string;
  /** Defined on the root command, so that every command accepts it (`--vklog`). */
  readonly global?: boolean;
}

const NO_ORCH = "no orchestrator client yet";
const NO_MULTICLUSTER = "no multicluster support yet";

/** Every flag of `meshd discovery` in the seed's order (`--vklog` belongs to the root command). */
export const DISCOVERY_FLAGS: readonly DiscoveryFlag[] = [
  {
    name: "caCertFile",
    type: "string",
    default: "",
    description: "x509 server CA certificate file",
    effect: "now",
  },
  {
    name: "clusterAliases",
    type: "stringToString",
    default: [],
    description: "Alias names for clusters, as alias=cluster pairs",
    effect: "no effect yet",
    reason: NO_MULTICLUSTER,
  },
  {
    name: "clusterID",
    type: "string",
    default: DEFAULT_REGISTRY,
    envDefault: "CLUSTER_ID",
    description: "Cluster ID of this daemon",
    effect: "now",
  },
  {
    name: "clusterRegistriesNamespace",
    type: "string",
    default: "mesh-system",
    description: "Namespace of the ConfigMap storing cluster configs",
    effect: "no effect yet",
    reason: NO_MULTICLUSTER,
  },
  {
    name: "cniNamespace",
    type: "string",
    default: "mesh-system",
    envDefault: "POD_NAMESPACE",
    description: "Namespace where the CNI component resides",
    effect: "no effect yet",
    reason: "no CNI component yet",
  },
  {
    name: "configDir",
    type: "string",
    default: "",
    description:
      "Directory watched for config YAML files; when set, files replace the resource API client as config source",
    effect: "now",
  },
  {
    name: "ctrlz_address",
    type: "string",
    default: "localhost",
    description: "Listen IP of the introspection facility; * for all",
    effect: "now",
  },
  { name: "ctrlz_port", type: "uint16", default: "9876", description: "Introspection port", effect: "now" },
  {
    name: "domain",
    type: "string",
    default: "cluster.local",
    description: "DNS domain suffix",
    effect: "now",
  },
  {
    name: "grpcAddr",
    type: "string",
    default: ":15010",
    description: "Discovery gRPC address",
    effect: "now",
  },
  {
    name: "httpAddr",
    type: "string",
    default: ":8080",
    description: "Discovery HTTP address",
    effect: "now",
  },
  {
    name: "httpsAddr",
    type: "string",
    default: ":15017",
    description: "Injection and validation HTTPS address",
    effect: "no effect yet",
    reason: "the injection and validation webhooks come later",
  },
  {
    name: "keepaliveInterval",
    type: "duration",
    default: "30s",
    description: "Idle time before pinging the peer",
    effect: "now",
  },
  {
    name: "keepaliveMaxServerConnectionAge",
    type: "duration",
    default: "2562047h47m16.854775807s",
    description: "Max age of a server connection before graceful close",
    effect: "now",
  },
  {
    name: "keepaliveTimeout",
    type: "duration",
    default: "10s",
    description: "Wait after a ping before closing",
    effect: "now",
  },
  {
    name: "kubeconfig",
    type: "string",
    default: "",
    description: "Use an orchestrator config file instead of in-cluster config",
    effect: "no effect yet",
    reason: NO_ORCH,
  },
  {
    name: "orchApiBurst",
    type: "int",
    default: "160",
    description: "Max burst when calling the orchestrator API",
    effect: "no effect yet",
    reason: NO_ORCH,
  },
  {
    name: "orchApiQPS",
    type: "float32",
    default: "80",
    description: "Max QPS to the orchestrator API",
    effect: "no effect yet",
    reason: NO_ORCH,
  },
  {
    name: "log_as_json",
    type: "bool",
    default: "false",
    description: "Format log output as JSON",
    effect: "now",
  },
  {
    name: "log_caller",
    type: "string",
    default: "",
    description: "Comma-separated scopes whose log lines include caller info",
    effect: "now",
  },
  {
    name: "log_output_level",
    type: "string",
    default: "",
    description: "Comma-separated <scope>:<level> minimum levels; a bare level applies to all scopes",
    effect: "now",
  },
  {
    name: "log_stacktrace_level",
    type: "string",
    default: "default:none",
    description: "Comma-separated <scope>:<level> at which stack traces are captured",
    effect: "now",
  },
  {
    name: "log_target",
    type: "stringArray",
    default: ["stdout"],
    description: "Log destinations: paths, or stdout, stderr",
    effect: "now",
  },
  {
    name: "meshConfig",
    type: "string",
    default: "./etc/mesh/config/mesh",
    description: "Mesh configuration file; a default mesh is used if absent",
    effect: "now",
  },
  {
    name: "monitoringAddr",
    type: "string",
    default: ":15014",
    description: "Self-monitoring HTTP address",
    effect: "now",
  },
  {
    name: "namespace",
    short: "n",
    type: "string",
    default: "mesh-system",
    envDefault: "POD_NAMESPACE",
    description: "Namespace where the controller resides",
    effect: "now",
  },
  {
    name: "networksConfig",
    type: "string",
    default: "./etc/mesh/config/meshNetworks",
    description: "Mesh networks file; default used if absent",
    effect: "no effect yet",
    reason: "no multi-network support yet",
  },
  {
    name: "profile",
    type: "bool",
    default: "false",
    description: "Enable profiling web interface at host:port/debug/pprof",
    effect: "no effect yet",
    reason: "no profiling interface yet",
  },
  {
    name: "registries",
    type: "stringSlice",
    default: [DEFAULT_REGISTRY],
    description: `Platform registries to read: ${DEFAULT_REGISTRY} and/or Mock`,
    effect: "no effect yet",
    reason: "no service registry yet",
  },
  {
    name: "secureGRPCAddr",
    type: "string",
    default: ":15012",
    description: "Secured discovery gRPC address",
    effect: "now",
  },
  {
    // Not in the seed: meshd's defence against denoland/deno#36788 (meshd/server/serving/README.md).
    name: "servingChildren",
    type: "int",
    default: "2",
    description:
      "Child processes that serve the gRPC ports behind a byte relay, replaced when one dies; 0 serves in the main process (a client's GOAWAY can then abort meshd, denoland/deno#36788)",
    effect: "now",
  },
  {
    name: "shutdownDuration",
    type: "duration",
    default: "10s",
    description:
      "Time allowed for graceful termination: meshd stops accepting and waits up to this long for certificate requests in flight, then exits without a GOAWAY",
    effect: "now",
  },
  {
    name: "tls-cipher-suites",
    type: "stringSlice",
    default: [],
    description: "Cipher suites for the daemon's TLS server; Go defaults when omitted",
    effect: "no effect yet",
    reason:
      "Deno's TLS stack chooses the suites itself (TLS 1.3 and ECDHE AEAD suites only; no CBC, RC4 or 3DES)",
  },
  {
    name: "tlsCertFile",
    type: "string",
    default: "",
    description: "x509 server certificate file",
    effect: "now",
  },
  {
    name: "tlsKeyFile",
    type: "string",
    default: "",
    description: "x509 private key file matching --tlsCertFile",
    effect: "now",
  },
  {
    name: "vklog",
    type: "Level",
    default: "0",
    description: "Log verbosity, like -v",
    effect: "no effect yet",
    reason: "nothing logs through klog",
    global: true,
  },
];

/**
 * The seed's preferred cipher suites (IANA names, as Go's crypto/tls names them), each with its
 * OpenSSL name, which node:tls's `ciphers` option takes.
 */
export const SECURE_CIPHER_SUITES: Readonly<Record<string, string>> = {
  TLS_AES_128_GCM_SHA256: "TLS_AES_128_GCM_SHA256",
  TLS_AES_256_GCM_SHA384: "TLS_AES_256_GCM_SHA384",
  TLS_CHACHA20_POLY1305_SHA256: "TLS_CHACHA20_POLY1305_SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: "ECDHE-ECDSA-AES128-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: "ECDHE-ECDSA-AES128-GCM-SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: "ECDHE-ECDSA-AES256-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: "ECDHE-ECDSA-AES256-GCM-SHA384",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: "ECDHE-RSA-AES128-SHA",
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: "ECDHE-RSA-AES128-GCM-SHA256",
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: "ECDHE-RSA-AES256-SHA",
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: "ECDHE-RSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-RSA-CHACHA20-POLY1305",
};

/**
 * The seed's insecure cipher suites: accepted, with a warning. Same form as
 * {@link SECURE_CIPHER_SUITES}; OpenSSL 3 builds leave out the RC4 and 3DES ones, so a TLS server on
 * node:tls cannot offer those.
 */
export const INSECURE_CIPHER_SUITES: Readonly<Record<string, string>> = {
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: "ECDHE-ECDSA-AES128-SHA256",
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: "ECDHE-ECDSA-RC4-SHA",
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: "ECDHE-RSA-DES-CBC3-SHA",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: "ECDHE-RSA-AES128-SHA256",
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: "ECDHE-RSA-RC4-SHA",
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: "DES-CBC3-SHA",
  TLS_RSA_WITH_AES_128_CBC_SHA: "AES128-SHA",
  TLS_RSA_WITH_AES_128_CBC_SHA256: "AES128-SHA256",
  TLS_RSA_WITH_AES_128_GCM_SHA256: "AES128-GCM-SHA256",
  TLS_RSA_WITH_AES_256_CBC_SHA: "AES256-SHA",
  TLS_RSA_WITH_AES_256_GCM_SHA384: "AES256-GCM-SHA384",
  TLS_RSA_WITH_RC4_128_SHA: "RC4-SHA",
};

/** The registries `--registries` accepts. */
export const REGISTRIES: readonly string[] = [DEFAULT_REGISTRY, "Mock"];

/** A listening address: `host:port` or `:port` (meshd seed, "Listening addresses"). */
export interface ListenAddress {
  /** Host name or IP, IPv6 without brackets; empty for every interface. */
  host: string;
  /** 0 to 65535; 0 lets the system choose. */
  port: number;
}

/**
 * The validated options of `meshd discovery`. Durations are in milliseconds (fractional below 1ms).
 * Flags marked "no effect yet" in {@link DISCOVERY_FLAGS} are validated but not used yet.
 */
export interface DiscoveryOptions {
  /** `--caCertFile`: x509 CA certificate file of the server; empty for none. */
  caCertFile: string;
  /** `--clusterAliases`: alias to cluster ID. */
  clusterAliases: Readonly<Record<string, string>>;
  /** `--clusterID`, else `CLUSTER_ID`: the cluster this daemon belongs to. */
  clusterID: string;
  /** `--clusterRegistriesNamespace`. */
  clusterRegistriesNamespace: string;
  /** `--cniNamespace`, else `POD_NAMESPACE`. */
  cniNamespace: string;
  /** `--configDir`: directory of config YAML files; empty for the resource API. */
  configDir: string;
  /** `--ctrlz_address`: listen IP or host of ctrlz; `*` for every interface. */
  ctrlzAddress: string;
  /** `--ctrlz_port`. */
  ctrlzPort: number;
  /** `--domain`: DNS domain suffix. */
  domain: string;
  /** `--grpcAddr`: plain-text xDS. */
  grpcAddr: ListenAddress;
  /** `--httpAddr`: discovery HTTP, with the debug endpoints. */
  httpAddr: ListenAddress;
  /** `--httpsAddr`: webhooks. */
  httpsAddr: ListenAddress;
  /** `--keepaliveInterval`. */
  keepaliveIntervalMs: number;
  /** `--keepaliveMaxServerConnectionAge`; Go's largest duration means never. */
  keepaliveMaxServerConnectionAgeMs: number;
  /** `--keepaliveTimeout`. */
  keepaliveTimeoutMs: number;
  /** `--kubeconfig`. */
  kubeconfig: string;
  /** `--orchApiBurst`. */
  orchApiBurst: number;
  /** `--orchApiQPS` (a float32). */
  orchApiQPS: number;
  /** The `--log_*` flags. */
  log: LogOptions;
  /** `--meshConfig`: mesh configuration file; a default mesh is used if it is absent. */
  meshConfig: string;
  /** `--monitoringAddr`: metrics. */
  monitoringAddr: ListenAddress;
  /** `--namespace`, else `POD_NAMESPACE`: where meshd runs. */
  namespace: string;
  /** `--networksConfig`. */
  networksConfig: string;
  /** `--profile`. */
  profile: boolean;
  /** `--registries`. */
  registries: readonly string[];
  /** `--secureGRPCAddr`: xDS over mutual TLS. */
  secureGRPCAddr: ListenAddress;
  /** `--servingChildren`: serving child processes; 0 serves in the main process. */
  servingChildren: number;
  /** `--shutdownDuration`: time allowed for graceful termination. */
  shutdownDurationMs: number;
  /** `--tls-cipher-suites`: IANA names; empty for the TLS library's defaults. */
  tlsCipherSuites: readonly string[];
  /** `--tlsCertFile`; set together with `tlsKeyFile`. */
  tlsCertFile: string;
  /** `--tlsKeyFile`. */
  tlsKeyFile: string;
  /** `--vklog`. */
  vklog: number;
}

/**
 * The flag values as given, by flag name: text for scalars, the items for list types, undefined when
 * not given.
 */
export type RawDiscoveryFlags = Readonly<Record<string, string | readonly string[] | undefined>>;

/** What {@link validateDiscoveryFlags} returns. */
export interface DiscoveryFlagsResult {
  /** The options; a bad flag holds its default, so do not start anything while `errors` is not empty. */
  options: DiscoveryOptions;
  /** One message per bad value, each naming the flag, the value and the reason. */
  errors: string[];
  /** Accepted but doubtful: insecure cipher suites, flags that have no effect yet. */
  warnings: string[];
}

function isZeroDefault(flag: DiscoveryFlag): boolean {
  return Array.isArray(flag.default)
    ? flag.default.length === 0
    : flag.default === "" || flag.default === "false" || flag.default === "0";
}

/** The `--help` text of a flag: the description, the default as pflag shows it, and the effect. */
export function flagHelp(flag: DiscoveryFlag): string {
  let text = flag.description;
  const value = Array.isArray(flag.default)
    ? `[${flag.default.join(",")}]`
    : flag.type === "string"
    ? JSON.stringify(flag.default)
    : String(flag.default);
  if (flag.envDefault) text += ` (default $${flag.envDefault}, else ${value})`;
  else if (!isZeroDefault(flag)) text += ` (default ${value})`;
  if (flag.effect === "no effect yet") text += ` (no effect yet: ${flag.reason})`;
  return text;
}

function arrayCollector(collect: (value: string, previous: string[]) => string[]) {
  // Commander passes the default as `previous` on the first use; there is none, as in pflag a
  // given list replaces the default rather than adding to it.
  return (value: string, previous: string[] | undefined): string[] => collect(value, previous ?? []);
}

/** The commander option of a flag. Values stay text (or lists of text) until validation. */
export function flagOption(flag: DiscoveryFlag): Option {
  const names = flag.short ? `-${flag.short}, --${flag.name}` : `--${flag.name}`;
  const option = new Option(`${names} ${flag.type === "bool" ? "[bool]" : `<${flag.type}>`}`, flagHelp(flag));
  switch (flag.type) {
    case "stringArray":
    case "stringToString":
      return option.argParser(arrayCollector(collectArray));
    case "stringSlice":
      return option.argParser(arrayCollector(collectStrings));
    default:
      return option;
  }
}

/** Adds every non-global flag of {@link DISCOVERY_FLAGS} to a command; returns the command. */
export function addDiscoveryFlags(command: CommandUnknownOpts): CommandUnknownOpts {
  for (const flag of DISCOVERY_FLAGS) if (!flag.global) command.addOption(flagOption(flag));
  return command;
}

/** The raw values of every flag of {@link DISCOVERY_FLAGS} after parsing, global ones included. */
export function readDiscoveryFlags(command: CommandUnknownOpts): RawDiscoveryFlags {
  const values = command.optsWithGlobals() as Record<string, string | string[] | true | undefined>;
  return Object.fromEntries(DISCOVERY_FLAGS.map((f) => {
    const value = values[flagOption(f).attributeName()];
    // A bool flag given without a value (`--profile`) is true, as in pflag.
    return [f.name, value === true ? "true" : value];
  }));
}

const GO_INT =
  /^([+-]?)(0[xX](?:_?[0-9a-fA-F])+|0[bB](?:_?[01])+|0[oO](?:_?[0-7])+|0(?:_?[0-7])+|0|[1-9](?:_?\d)*)$/;

/**
 * Go's strconv.ParseInt/ParseUint with base 0, as pflag's int and uint16 use: `42`, `0x2a`, `0o52`,
 * `052`, `1_000`.
 */
function parseGoInt(text: string, min: bigint, max: bigint): ValueResult<bigint> {
  const m = GO_INT.exec(text);
  if (!m || (min >= 0n && m[1] === "-")) {
    return { ok: false, reason: min >= 0n ? "is not an unsigned integer" : "is not an integer" };
  }
  let digits = m[2].replaceAll("_", "");
  if (/^0[0-7]/.test(digits)) digits = `0o${digits.slice(1)}`;
  const value = m[1] === "-" ? -BigInt(digits) : BigInt(digits);
  if (value < min || value > max) return { ok: false, reason: `is out of range ${min}..${max}` };
  return { ok: true, value };
}

const FLOAT32_MAX = 3.4028234663852886e38;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const HOST_NAME =
  /^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$/;
const IPV6 = /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(%[\w.-]+)?$/;

/** Go's net.SplitHostPort plus a numeric port: `host:port`, `[v6]:port` or `:port`. */
export function parseListenAddress(text: string): ValueResult<ListenAddress> {
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):([^:]*)$/.exec(text);
  if (!m) return { ok: false, reason: "is not an address; use host:port or :port" };
  const host = m[1] ?? m[2];
  if (m[1] !== undefined ? !IPV6.test(host) : host !== "" && !HOST_NAME.test(host)) {
    return { ok: false, reason: `has an invalid host ${showValue(host)}` };
  }
  if (!/^\d+$/.test(m[3])) {
    return { ok: false, reason: `has port ${showValue(m[3])}; a port is a number 0..65535` };
  }
  const port = Number(m[3]);
  if (port > 65535) return { ok: false, reason: `has port ${m[3]}, out of range 0..65535` };
  return { ok: true, value: { host, port } };
}

/** klog's Level is an int32. */
const INT32_MIN = -(2n ** 31n);
const INT32_MAX = 2n ** 31n - 1n;

/**
 * Checks `--vklog`, the one flag every command has, so that commands other than `discovery` refuse a
 * bad value too.
 *
 * @returns an error message, or undefined when the value is valid or not given
 */
export function checkVklog(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const r = parseGoInt(text, INT32_MIN, INT32_MAX);
  return r.ok ? undefined : `--vklog: ${showValue(text)} ${r.reason}`;
}

/** Reads one flag's value or default and parses it by type, recording errors. */
class FlagReader {
  readonly errors: string[] = [];
  readonly warnings: string[] = [];

  constructor(private readonly raw: RawDiscoveryFlags, private readonly env: MeshdEnvironment) {}

  #flag(name: string): DiscoveryFlag {
    const flag = DISCOVERY_FLAGS.find((f) => f.name === name);
    if (!flag) throw new Error(`no flag --${name} in the table`);
    return flag;
  }

  /** The value given, if any; a flag without effect that is given gets a warning. */
  #given(flag: DiscoveryFlag): string | readonly string[] | undefined {
    const given = this.raw[flag.name];
    if (given !== undefined && flag.effect === "no effect yet") {
      this.warnings.push(`--${flag.name} has no effect yet: ${flag.reason}`);
    }
    return given;
  }

  /** The given text, else the variable named by envDefault when set, else the default. */
  #text(name: string): { text: string; flag: DiscoveryFlag } {
    const flag = this.#flag(name);
    const given = this.#given(flag);
    if (given !== undefined) return { text: String(given), flag };
    const fromEnv = flag.envDefault ? this.env[flag.envDefault] : undefined;
    return { text: typeof fromEnv === "string" ? fromEnv : String(flag.default), flag };
  }

  #parse<T>(name: string, fallback: T, parse: (text: string) => ValueResult<T>): T {
    const { text, flag } = this.#text(name);
    const r = parse(text);
    if (r.ok) return r.value;
    const from = flag.envDefault && this.raw[name] === undefined ? ` (from $${flag.envDefault})` : "";
    this.errors.push(`--${name}${from}: ${showValue(text)} ${r.reason}`);
    return fallback;
  }

  string(name: string, check?: (text: string) => string | undefined): string {
    const fallback = String(this.#flag(name).default);
    return this.#parse(name, fallback, (text) => {
      const reason = check?.(text);
      return reason === undefined ? { ok: true, value: text } : { ok: false, reason };
    });
  }

  list(name: string): readonly string[] {
    const flag = this.#flag(name);
    return (this.#given(flag) ?? flag.default) as readonly string[];
  }

  bool(name: string): boolean {
    return this.#parse(name, false, parseGoBool);
  }

  duration(name: string, check: (ms: number) => string | undefined): number {
    const fallback = parseGoDuration(String(this.#flag(name).default));
    return this.#parse(name, fallback.ok ? fallback.value : 0, (text) => {
      const r = parseGoDuration(text);
      const reason = r.ok ? check(r.value) : undefined;
      return reason === undefined ? r : { ok: false, reason };
    });
  }

  int(name: string, min: bigint, max: bigint): number {
    return this.#parse(name, Number(this.#flag(name).default), (text) => {
      const r = parseGoInt(text, min, max);
      return r.ok ? safeInteger(r.value) : r;
    });
  }

  float32(name: string): number {
    return this.#parse(name, Number(this.#flag(name).default), (text) => {
      const r = parseDecimal(text);
      if (r.ok && Math.abs(r.value) > FLOAT32_MAX) {
        return { ok: false, reason: "is out of range for a float32" };
      }
      return r.ok ? { ok: true, value: Math.fround(r.value) } : r;
    });
  }

  address(name: string): ListenAddress {
    const fallback = parseListenAddress(String(this.#flag(name).default));
    return this.#parse(name, fallback.ok ? fallback.value : { host: "", port: 0 }, parseListenAddress);
  }

  /** Records a message about a flag's value, for checks that span values or items. */
  error(name: string, message: string): void {
    this.errors.push(`--${name}: ${message}`);
  }
}

function positive(ms: number): string | undefined {
  return ms > 0 ? undefined : "must be positive";
}

function nonNegative(ms: number): string | undefined {
  return ms >= 0 ? undefined : "must not be negative";
}

function dnsLabel(text: string): string | undefined {
  return DNS_LABEL.test(text)
    ? undefined
    : "is not a valid namespace: lowercase letters, digits and '-', starting and ending with a letter " +
      "or digit, at most 63 characters";
}

function dnsName(text: string): string | undefined {
  return text.length <= 253 && HOST_NAME.test(text) ? undefined : "is not a valid DNS domain";
}

function nonEmpty(text: string): string | undefined {
  return text === "" ? "must not be empty" : undefined;
}

function listenHost(text: string): string | undefined {
  const host = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  return text === "*" || HOST_NAME.test(host) || IPV6.test(host)
    ? undefined
    : "is not a host name or IP address (use * for every interface)";
}

/** pflag's stringToString: `a=b,c=d`, repeatable; later keys win. */
function stringToString(r: FlagReader, name: string, items: readonly string[]): Record<string, string> {
  const map: Record<string, string> = {};
  for (const item of items) {
    for (const pair of item.split(",")) {
      if (pair === "") continue;
      const eq = pair.indexOf("=");
      if (eq <= 0) r.error(name, `${showValue(pair)} must be formatted as key=value`);
      else map[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return map;
}

const KNOWN_SUITES = [...Object.keys(SECURE_CIPHER_SUITES), ...Object.keys(INSECURE_CIPHER_SUITES)].join(
  ", ",
);

function cipherSuites(r: FlagReader, name: string, items: readonly string[]): string[] {
  const suites: string[] = [];
  for (const suite of items) {
    if (suite in SECURE_CIPHER_SUITES) suites.push(suite);
    else if (suite in INSECURE_CIPHER_SUITES) {
      suites.push(suite);
      r.warnings.push(`--${name}: ${suite} is insecure`);
    } else {
      r.error(name, `${showValue(suite)} is not a supported cipher suite; the suites are ${KNOWN_SUITES}`);
    }
  }
  return suites;
}

/**
 * Validates the parsed flag values into {@link DiscoveryOptions}. Every bad value is reported, not
 * only the first; flags not given take their table default, or the environment variable named by
 * `envDefault` (`--namespace` from `POD_NAMESPACE`, `--clusterID` from `CLUSTER_ID`).
 *
 * @param raw the values as given, by flag name ({@link readDiscoveryFlags})
 * @param context the parsed environment, for the defaults that come from it
 */
export function validateDiscoveryFlags(
  raw: RawDiscoveryFlags,
  context: { environment: MeshdEnvironment },
): DiscoveryFlagsResult {
  const r = new FlagReader(raw, context.environment);
  const log = parseLogOptions({
    outputLevel: r.string("log_output_level"),
    stacktraceLevel: r.string("log_stacktrace_level"),
    caller: r.string("log_caller"),
    asJson: r.bool("log_as_json"),
    targets: r.list("log_target"),
  });
  r.errors.push(...log.errors);
  const registries = r.list("registries");
  for (const registry of registries) {
    if (!REGISTRIES.includes(registry)) {
      r.error("registries", `${showValue(registry)} is not a registry; use ${REGISTRIES.join(" or ")}`);
    }
  }
  const options: DiscoveryOptions = {
    caCertFile: r.string("caCertFile"),
    clusterAliases: stringToString(r, "clusterAliases", r.list("clusterAliases")),
    clusterID: r.string("clusterID", nonEmpty),
    clusterRegistriesNamespace: r.string("clusterRegistriesNamespace", dnsLabel),
    cniNamespace: r.string("cniNamespace", dnsLabel),
    configDir: r.string("configDir"),
    ctrlzAddress: r.string("ctrlz_address", listenHost),
    ctrlzPort: r.int("ctrlz_port", 0n, 65535n),
    domain: r.string("domain", dnsName),
    grpcAddr: r.address("grpcAddr"),
    httpAddr: r.address("httpAddr"),
    httpsAddr: r.address("httpsAddr"),
    keepaliveIntervalMs: r.duration("keepaliveInterval", positive),
    keepaliveMaxServerConnectionAgeMs: r.duration("keepaliveMaxServerConnectionAge", positive),
    keepaliveTimeoutMs: r.duration("keepaliveTimeout", positive),
    kubeconfig: r.string("kubeconfig"),
    orchApiBurst: r.int("orchApiBurst", -(2n ** 63n), 2n ** 63n - 1n),
    orchApiQPS: r.float32("orchApiQPS"),
    log: log.value,
    meshConfig: r.string("meshConfig", nonEmpty),
    monitoringAddr: r.address("monitoringAddr"),
    namespace: r.string("namespace", dnsLabel),
    networksConfig: r.string("networksConfig"),
    profile: r.bool("profile"),
    registries,
    secureGRPCAddr: r.address("secureGRPCAddr"),
    servingChildren: r.int("servingChildren", 0n, 64n),
    shutdownDurationMs: r.duration("shutdownDuration", nonNegative),
    tlsCipherSuites: cipherSuites(r, "tls-cipher-suites", r.list("tls-cipher-suites")),
    tlsCertFile: r.string("tlsCertFile"),
    tlsKeyFile: r.string("tlsKeyFile"),
    vklog: r.int("vklog", INT32_MIN, INT32_MAX),
  };
  if ((options.tlsCertFile === "") !== (options.tlsKeyFile === "")) {
    const [set, missing] = options.tlsCertFile
      ? ["tlsCertFile", "tlsKeyFile"]
      : ["tlsKeyFile", "tlsCertFile"];
    r.error(set, `is set but --${missing} is not; give both or neither`);
  }
  return { options, errors: r.errors, warnings: r.warnings };
}
