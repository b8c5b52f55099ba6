/**
 * The flags of `proxy` (after Istio's `pilot-agent proxy sidecar` plus Envoy's `--concurrency`): one
 * table with each flag's name, default and help, the commander options built from it, and
 * {@link validateProxyFlags}, which turns the text given into {@link ProxyOptions} and reports every
 * bad value at once, each error naming the flag, the value and the reason (as meshd's flags do).
 *
 * @module
 */
import { type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { isIP } from "node:net";
import { parseListenAddress, showValue } from "../../shared/internal/cli/go_values.ts";
import { uniformLevels } from "../logging/logger.ts";
import {
  isLoggerName,
  isLogLevel,
  LOG_LEVELS,
  LOGGERS,
  type LogLevels,
} from "../../shared/internal/logging/levels.ts";
import type { ProxyFlag } from "./flag.ts";
import { LIMIT_FLAGS, validateLimitFlags } from "./limit_flags.ts";
import { DATA_PATH_FLAGS, type DataPathOptions, validateDataPathFlags } from "./data_path_flags.ts";
import { STATUS_FLAGS, type StatusOptions, validateStatusFlags } from "./status_flags.ts";
import type { ListenerLimits } from "../http/conn_limits.ts";

export type { ProxyFlag } from "./flag.ts";

/** The flags, in `--help` order. */
export const PROXY_FLAGS: readonly ProxyFlag[] = [
  {
    name: "type",
    value: "<type>",
    description: "sidecar, or router: an ingress gateway whose listeners and routes come from the Gateways " +
      "that select its workload and the VirtualServices bound to them (HTTP, and HTTPS with tls.mode SIMPLE " +
      "or MUTUAL and a credentialName Secret; other TLS modes are skipped)",
    default: "sidecar",
  },
  {
    name: "proxyless",
    value: "<dir>",
    description:
      "proxyless gRPC agent: no data path; writes <dir>/grpc-bootstrap.json (GRPC_XDS_BOOTSTRAP for " +
      "grpc-js-xds; --discoveryAddress must be meshd's plain-text --grpcAddr) and keeps the certificate from " +
      "--caAddress renewed in <dir> (cert-chain.pem, key.pem, root-cert.pem)",
  },
  {
    name: "discoveryAddress",
    value: "<host:port>[,<host:port>...]",
    description: "meshd's ADS address: its --secureGRPCAddr (mutual TLS), or --grpcAddr with " +
      "--controlPlaneAuthPolicy NONE. Several meshd replicas: a comma-separated list (a broken stream or a " +
      "failed connect moves to the next, with backoff; the last config stays in force meanwhile), or one DNS " +
      "name with several addresses (fetch's connector tries each; not tested here). Every replica's certificate must pass the name check",
    default: "meshd.mesh-system.svc:15012",
  },
  {
    name: "controlPlaneAuthPolicy",
    value: "<policy>",
    description: "MUTUAL_TLS: ADS over mutual TLS with the workload certificate; NONE: ADS in plain text",
    default: "MUTUAL_TLS",
  },
  {
    name: "discoveryServerName",
    value: "<name>",
    description:
      "the name every meshd replica's serving certificate must carry (default: the host dialled, " +
      "each address of --discoveryAddress in turn)",
  },
  {
    name: "caAddress",
    value: "<host:port>[,<host:port>...]",
    description: "meshd's CA (mutual TLS); a list as --discoveryAddress: a CSR that finds no meshd at one " +
      "address goes to the next; default --discoveryAddress",
  },
  {
    name: "namespace",
    value: "<namespace>",
    description: "the workload's namespace",
    env: "POD_NAMESPACE",
  },
  {
    name: "serviceAccount",
    value: "<name>",
    description: "the workload's service account; must match the token's (--tokenFile) when both are known",
    default: "default",
  },
  {
    name: "workloadEntry",
    value: "<name>",
    description: "the WorkloadEntry this proxy is (exactly one of --workloadEntry and --workloadGroup)",
  },
  {
    name: "workloadGroup",
    value: "<name>",
    description: "auto-register into this WorkloadGroup (exactly one of --workloadEntry and --workloadGroup)",
  },
  {
    name: "instanceName",
    value: "<name>",
    description: "with --workloadGroup: this instance's name (default: the host name)",
  },
  {
    name: "labels",
    value: "<k=v,...>",
    description: "workload labels, sent as node metadata LABELS; repeatable",
    repeatable: true,
  },
  {
    name: "address",
    value: "<ip>",
    description: "the workload's IP address",
    env: "INSTANCE_IP",
  },
  {
    name: "tokenFile",
    value: "<file>",
    description:
      "the token for a CSR without a valid certificate: the pod's projected service-account token (what meshd's " +
      "injector mounts here, audience TOKEN_AUDIENCES) or a meshd bootstrap token; read again for every such CSR",
    default: "/var/run/secrets/tokens/mesh-token",
  },
  {
    name: "rootCertFile",
    value: "<file>",
    description: "the root certificate meshd's serving certificate chains to",
    default: "/var/run/secrets/mesh/root-cert.pem",
  },
  {
    name: "inbound",
    value: "<port=host:port>",
    description:
      "an inbound port and the application endpoint behind it, e.g. 8080=127.0.0.1:18080; repeatable",
    repeatable: true,
  },
  {
    name: "inboundBindAddress",
    value: "<ip>",
    description: "where inbound listeners bind (default: --address; 0.0.0.0 for every interface)",
  },
  {
    name: "outbound",
    value: "<host:port>",
    description: "the outbound listener, e.g. 127.0.0.1:15001: redirected connections by original " +
      "destination (needs --allow-ffi on libc), HTTP/1.1 by Host, TCP, passthrough; HTTP/2 and TLS as TCP " +
      "(partial); automatic mutual TLS",
  },
  {
    name: "proxy-admin-port",
    value: "<port>",
    description: "the admin interface port, on 127.0.0.1",
    default: "15000",
  },
  {
    name: "concurrency",
    value: "<n>",
    description: "worker threads that accept inbound connections (0: one per core)",
    default: "0",
  },
  {
    name: "proxyLogLevel",
    value: "<level>",
    description: `log level of every logger: ${LOG_LEVELS.join(", ")}`,
    default: "warning",
  },
  {
    name: "proxyComponentLogLevel",
    value: "<logger:level,...>",
    description: `per-logger levels; loggers: ${LOGGERS.join(", ")}`,
    default: "",
  },
  ...LIMIT_FLAGS,
  ...DATA_PATH_FLAGS,
  ...STATUS_FLAGS,
];

/** `port=host:port` of `--inbound`. */
export interface InboundPort {
  port: number;
  appAddress: string;
  appPort: number;
}

/** The validated options. */
export interface ProxyOptions extends StatusOptions, DataPathOptions {
  discoveryAddress: string;
  plaintext: boolean;
  discoveryServerName?: string;
  caAddress?: string;
  namespace: string;
  serviceAccount: string;
  workloadEntry?: string;
  workloadGroup?: string;
  /** The node name: the WorkloadEntry, or the instance name with a WorkloadGroup. */
  nodeName: string;
  labels: Record<string, string>;
  address: string;
  tokenFile: string;
  rootCertFile: string;
  inbound: InboundPort[];
  inboundBindAddress: string;
  outbound?: { host: string; port: number };
  /** The proxyless gRPC agent's output directory (proxy/proxyless). */
  proxyless?: string;
  /** `router`: gateway mode. */
  type: "sidecar" | "router";
  adminPort: number;
  /** Resolved: at least 1. */
  concurrency: number;
  logLevels: LogLevels;
  /** Timeouts and connection limit of every listener (inbound, outbound, gateway). */
  connectionLimits: ListenerLimits;
}

/** The result of {@link validateProxyFlags}. */
export interface ProxyFlagsResult {
  options: ProxyOptions;
  errors: string[];
  warnings: string[];
}

/** What was given: text per flag name (arrays for repeatable flags); undefined when absent. */
export type RawProxyFlags = Record<string, string | string[] | undefined>;

function camel(name: string): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Adds every flag to `command` as a text option (validation is {@link validateProxyFlags}'s job). */
export function addProxyFlags(command: CommandUnknownOpts): CommandUnknownOpts {
  for (const f of PROXY_FLAGS) {
    let help = f.description;
    if (f.env) help += ` (env ${f.env})`;
    if (f.noEffect) help += `; NO EFFECT YET: ${f.noEffect}`;
    const option = new Option(`--${f.name} ${f.value}`, help);
    if (f.repeatable) option.argParser(collect);
    else if (f.default !== undefined && f.default !== "") option.default(f.default);
    command.addOption(option);
  }
  return command;
}

/** The values commander parsed, by flag name, with whether each was given on the command line. */
export function readProxyFlags(command: CommandUnknownOpts): RawProxyFlags {
  const opts = command.opts() as Record<string, string | string[] | undefined>;
  const raw: RawProxyFlags = {};
  for (const f of PROXY_FLAGS) {
    const key = camel(f.name);
    if (command.getOptionValueSource(key) === "cli") raw[f.name] = opts[key];
  }
  return raw;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** The context of {@link validateProxyFlags}. */
export interface ProxyFlagsContext {
  env: Readonly<Record<string, string | undefined>>;
  /** Cores, for --concurrency 0. */
  cores: number;
  /** The host name, for --instanceName's default. */
  hostname(): string;
}

function port(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= 1 && n <= 65535 ? n : undefined;
}

/**
 * Validates the flags; every bad value is reported, each naming its flag.
 *
 * @param raw the text given per flag ({@link readProxyFlags}); flags not given take their default
 */
export function validateProxyFlags(raw: RawProxyFlags, context: ProxyFlagsContext): ProxyFlagsResult {
  const errors: string[] = [];
  const warnings: string[] = [];
  const err = (name: string, value: string, reason: string) =>
    errors.push(`--${name}: ${showValue(value)} ${reason}`);
  const text = (name: string): string | undefined => {
    const given = raw[name];
    if (typeof given === "string") return given;
    const f = PROXY_FLAGS.find((x) => x.name === name)!;
    const fromEnv = f.env ? context.env[f.env] : undefined;
    if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
    return f.default;
  };
  const list = (name: string): string[] => {
    const given = raw[name];
    return Array.isArray(given) ? given : typeof given === "string" ? [given] : [];
  };
  for (const f of PROXY_FLAGS) {
    if (f.noEffect && raw[f.name] !== undefined) {
      warnings.push(`--${f.name} has no effect yet: ${f.noEffect}`);
    }
  }

  /** A list of meshd addresses, each `host:port` with both given. */
  const meshdAddressList = (name: string): string | undefined => {
    const value = text(name);
    if (value === undefined) return undefined;
    if (value.split(",").every((a) => a.trim() === "")) err(name, value, "names no address");
    for (const address of value.split(",").map((a) => a.trim()).filter((a) => a !== "")) {
      const r = parseListenAddress(address);
      if (!r.ok) err(name, address, r.reason);
      else if (r.value.host === "" || r.value.port === 0) {
        err(name, address, "needs a host and a port other than 0, e.g. meshd.mesh-system.svc:15012");
      }
    }
    return value;
  };
  const discoveryAddress = meshdAddressList("discoveryAddress") ?? "";
  const caAddress = raw.caAddress === undefined ? undefined : meshdAddressList("caAddress");

  const policy = text("controlPlaneAuthPolicy")!;
  if (policy !== "MUTUAL_TLS" && policy !== "NONE") {
    err("controlPlaneAuthPolicy", policy, "must be MUTUAL_TLS or NONE");
  }
  const discoveryServerName = text("discoveryServerName");
  if (
    discoveryServerName !== undefined && !DNS_SUBDOMAIN.test(discoveryServerName) &&
    !isIP(discoveryServerName)
  ) {
    err("discoveryServerName", discoveryServerName, "is not a DNS name or IP address");
  }

  const namespace = text("namespace");
  if (namespace === undefined) errors.push("--namespace: required (or set POD_NAMESPACE)");
  else if (!DNS_LABEL.test(namespace)) {
    err("namespace", namespace, "is not a valid namespace: lowercase letters, digits and '-', at most 63");
  }
  const serviceAccount = text("serviceAccount")!;
  if (!DNS_SUBDOMAIN.test(serviceAccount)) {
    err("serviceAccount", serviceAccount, "is not a valid service account name (DNS-1123 subdomain)");
  }

  const workloadEntry = text("workloadEntry");
  const workloadGroup = text("workloadGroup");
  let nodeName = "";
  if ((workloadEntry === undefined) === (workloadGroup === undefined)) {
    errors.push("--workloadEntry, --workloadGroup: give exactly one of them");
  }
  for (const [name, value] of [["workloadEntry", workloadEntry], ["workloadGroup", workloadGroup]] as const) {
    if (value !== undefined && !DNS_SUBDOMAIN.test(value)) {
      err(name, value, "is not a valid name (DNS-1123 subdomain)");
    }
  }
  if (workloadEntry !== undefined) {
    nodeName = workloadEntry;
    if (raw.instanceName !== undefined) errors.push("--instanceName: only with --workloadGroup");
  } else {
    const given = text("instanceName");
    nodeName = given ?? context.hostname().toLowerCase();
    if (!DNS_SUBDOMAIN.test(nodeName)) {
      err(
        "instanceName",
        nodeName,
        `is not a valid name (DNS-1123 subdomain)${given ? "" : " (from the host name)"}`,
      );
    }
  }

  const labels: Record<string, string> = {};
  for (const item of list("labels")) {
    for (const pair of item.split(",")) {
      if (pair === "") continue;
      const eq = pair.indexOf("=");
      const key = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      if (eq <= 0) err("labels", pair, "must be formatted as key=value");
      else if (!LABEL_KEY.test(key)) err("labels", pair, `has an invalid label key ${showValue(key)}`);
      else if (!LABEL_VALUE.test(value)) {
        err("labels", pair, `has an invalid label value ${showValue(value)}`);
      } else labels[key] = value;
    }
  }

  const address = text("address");
  if (address === undefined) errors.push("--address: required (or set INSTANCE_IP)");
  else if (!isIP(address)) err("address", address, "is not an IP address");

  const tokenFile = text("tokenFile")!;
  const rootCertFile = text("rootCertFile")!;
  for (const [name, value] of [["tokenFile", tokenFile], ["rootCertFile", rootCertFile]] as const) {
    if (value === "") errors.push(`--${name}: must not be empty`);
  }

  const inbound: InboundPort[] = [];
  for (const item of list("inbound")) {
    const m = /^(\d+)=(.+)$/.exec(item);
    const containerPort = m ? port(m[1]) : undefined;
    if (!m) {
      err("inbound", item, "must be formatted as <port>=<host>:<port>, e.g. 8080=127.0.0.1:18080");
      continue;
    }
    if (containerPort === undefined) {
      err("inbound", item, `has port ${m[1]}, out of range 1..65535`);
      continue;
    }
    const app = parseListenAddress(m[2]);
    if (!app.ok) err("inbound", item, `has an application endpoint that ${app.reason}`);
    else if (!isIP(app.value.host.replace(/^\[|\]$/g, "")) || app.value.port === 0) {
      err("inbound", item, "needs an application IP address and a port other than 0, e.g. 127.0.0.1:18080");
    } else if (inbound.some((p) => p.port === containerPort)) {
      err("inbound", item, `repeats port ${containerPort}`);
    } else inbound.push({ port: containerPort, appAddress: app.value.host, appPort: app.value.port });
  }

  const bind = text("inboundBindAddress") ?? address ?? "";
  if (raw.inboundBindAddress !== undefined && !isIP(bind)) {
    err("inboundBindAddress", bind, "is not an IP address");
  }

  let outbound: { host: string; port: number } | undefined;
  const outboundText = text("outbound");
  if (outboundText !== undefined) {
    const r = parseListenAddress(outboundText);
    if (!r.ok) err("outbound", outboundText, r.reason);
    else if (r.value.port === 0) err("outbound", outboundText, "needs a port other than 0");
    else outbound = { host: r.value.host === "" ? "127.0.0.1" : r.value.host, port: r.value.port };
  }

  const adminText = text("proxy-admin-port")!;
  const adminPort = /^\d{1,5}$/.test(adminText) && Number(adminText) <= 65535 ? Number(adminText) : -1;
  if (adminPort < 0) err("proxy-admin-port", adminText, "is not a port number 0..65535");
  for (const p of inbound) {
    if (p.port === adminPort) err("proxy-admin-port", adminText, `is also an --inbound port`);
  }

  if (outbound && (outbound.port === adminPort || inbound.some((p) => p.port === outbound!.port))) {
    err("outbound", outboundText!, `uses port ${outbound.port} of an --inbound port or the admin port`);
  }

  const typeText = text("type")!;
  if (typeText !== "sidecar" && typeText !== "router") err("type", typeText, "is not sidecar or router");

  const concurrencyText = text("concurrency")!;
  let concurrency = /^\d{1,4}$/.test(concurrencyText) ? Number(concurrencyText) : -1;
  if (concurrency < 0 || concurrency > 256) {
    err("concurrency", concurrencyText, "is not a whole number 0..256 (0: one worker per core)");
    concurrency = 1;
  } else if (concurrency === 0) concurrency = Math.max(1, context.cores);

  const levelText = text("proxyLogLevel")!;
  let logLevels = uniformLevels("warning");
  if (isLogLevel(levelText)) logLevels = uniformLevels(levelText);
  else err("proxyLogLevel", levelText, `is not a level; use ${LOG_LEVELS.join(", ")}`);
  for (const pair of (text("proxyComponentLogLevel") ?? "").split(",")) {
    if (pair === "") continue;
    const [logger, level, ...rest] = pair.split(":");
    if (rest.length > 0 || level === undefined) {
      err("proxyComponentLogLevel", pair, "must be formatted as logger:level");
    } else if (!isLoggerName(logger)) {
      err("proxyComponentLogLevel", pair, `names no logger; the loggers are ${LOGGERS.join(", ")}`);
    } else if (!isLogLevel(level)) {
      err("proxyComponentLogLevel", pair, `has no level ${showValue(level)}; use ${LOG_LEVELS.join(", ")}`);
    } else logLevels[logger] = level;
  }

  const connectionLimits = validateLimitFlags(text, err);
  const status = validateStatusFlags(text, context.env, { err, errors, warnings });
  const taken = [adminPort, ...inbound.map((p) => p.port), ...(outbound ? [outbound.port] : [])];
  if (status.statusPort !== 0 && taken.includes(status.statusPort)) {
    err("statusPort", String(status.statusPort), "is also the admin, an --inbound or the --outbound port");
  }

  const options: ProxyOptions = {
    discoveryAddress,
    plaintext: policy === "NONE",
    namespace: namespace ?? "",
    serviceAccount,
    nodeName,
    labels,
    address: address ?? "",
    tokenFile,
    rootCertFile,
    inbound,
    inboundBindAddress: bind,
    type: typeText === "router" ? "router" : "sidecar",
    adminPort,
    concurrency,
    logLevels,
    connectionLimits,
    ...validateDataPathFlags(text, err),
    ...status,
  };
  if (discoveryServerName !== undefined) options.discoveryServerName = discoveryServerName;
  if (caAddress !== undefined) options.caAddress = caAddress;
  if (workloadEntry !== undefined) options.workloadEntry = workloadEntry;
  if (workloadGroup !== undefined) options.workloadGroup = workloadGroup;
  if (outbound !== undefined) options.outbound = outbound;
  if (text("proxyless") !== undefined) options.proxyless = text("proxyless");
  return { options, errors, warnings };
}
