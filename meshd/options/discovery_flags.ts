/**
 * The flags of `meshd discovery` (meshd seed, "`meshd discovery` flags", "Listening addresses" and
 * the cipher suite lists): the commander options built from the table of ./discovery_flag_table.ts,
 * and the validation of the parsed values into {@link DiscoveryOptions}.
 *
 * Commander keeps every value as the text given; this module parses it the way Go's pflag does
 * (ints in Go syntax with 0x/0o/0b prefixes, durations as time.ParseDuration, bools as
 * strconv.ParseBool), so that all errors are found in one pass and each names the flag, the value
 * and the reason.
 *
 * @module
 */
import { type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { collectArray, collectStrings } from "../../shared/internal/cli/pflag.ts";
import {
  INT32_MAX,
  INT32_MIN,
  type ListenAddress,
  parseGoInt,
  showValue,
} from "../../shared/internal/cli/go_values.ts";
import { type LogOptions, parseLogOptions } from "../logging/mod.ts";
import { INSECURE_CIPHER_SUITES, KNOWN_SUITES, SECURE_CIPHER_SUITES } from "./cipher_suites.ts";
import { DISCOVERY_FLAGS, type DiscoveryFlag, REGISTRIES } from "./discovery_flag_table.ts";
import type { MeshdEnvironment } from "./environment.ts";
import {
  dnsLabel,
  dnsName,
  FlagReader,
  listenHost,
  nonEmpty,
  nonNegative,
  positive,
  type RawDiscoveryFlags,
  stringToString,
} from "./flag_reader.ts";

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
  /** `--grpcTransport`: how the gRPC ports are served (meshd/server/grpc_codec/README.md). */
  grpcTransport: GrpcTransport;
  /** `--servingChildren`: serving child processes with `children`; 0 serves with grpc-js in the main process. */
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

/** The values of `--grpcTransport`. */
export type GrpcTransport = "codec" | "children";

function grpcTransport(text: string): string | undefined {
  return text === "codec" || text === "children" ? undefined : "use codec or children";
}

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
  // istiod's Mock registry serves canned test services; meshd has none to serve.
  if (registries.includes("Mock")) {
    r.warnings.push("--registries: Mock has no effect: meshd has no mock registry");
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
    grpcTransport: r.string("grpcTransport", grpcTransport) as GrpcTransport,
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
  if (options.grpcTransport === "codec" && r.isGiven("servingChildren")) {
    r.warnings.push(
      "--servingChildren has no effect with --grpcTransport codec (the default): no child serves",
    );
  }
  if ((options.tlsCertFile === "") !== (options.tlsKeyFile === "")) {
    const [set, missing] = options.tlsCertFile
      ? ["tlsCertFile", "tlsKeyFile"]
      : ["tlsKeyFile", "tlsCertFile"];
    r.error(set, `is set but --${missing} is not; give both or neither`);
  }
  return { options, errors: r.errors, warnings: r.warnings };
}
