/**
 * The flags meshctl's live commands share (meshctl seed, "Debug flags" and "Authentication" 2), and
 * the {@link MeshdDebugSource} they name: meshd's debug HTTP interface (`--debug-address`), or
 * debug requests over xDS (`--xds-address`, as istioctl) with `--xds-port`, `--cert-dir`,
 * `--authority`, `--insecure`, `--plaintext` and a bearer token (`--xds-token-file` or env
 * MESHCTL_XDS_TOKEN). `--xds-label` and the orchestrator's token are resolved before the command
 * runs (orch/xds_mode.ts), which leaves `--xds-label` unset.
 *
 * @module
 */
import { type Command, Option } from "@commander-js/extra-typings";
import { join } from "node:path";
import { parseDuration } from "../shared/mod.ts";
import { DEFAULT_DEBUG_ADDRESS, MeshdClient, type MeshdDebugSource } from "./meshd_client.ts";
import { parseBool } from "../shared/internal/cli/pflag.ts";
import { XdsDebugClient } from "./xds_debug_client.ts";

/** The seed's default `--xds-port`: meshd's --secureGRPCAddr port. */
export const DEFAULT_XDS_PORT = 15012;

/** The environment variable that holds a bearer token for `--xds-address`. */
export const XDS_TOKEN_ENV = "MESHCTL_XDS_TOKEN";

/** Files of `--cert-dir`, as istioctl (adsc) names them. */
export const CERT_DIR_FILES = { certChain: "cert-chain.pem", key: "key.pem", root: "root-cert.pem" } as const;

/** Flags that only mean something with `--xds-address`, by option key. */
const XDS_ONLY: readonly [string, string][] = [
  ["certDir", "--cert-dir"],
  ["authority", "--authority"],
  ["insecure", "--insecure"],
  ["plaintext", "--plaintext"],
  ["xdsTokenFile", "--xds-token-file"],
  ["xdsPort", "--xds-port"],
];

/** Adds --debug-address, --timeout and the seed's xDS flags to a command. */
export function addDebugFlags<T extends Command<unknown[], Record<string, unknown>>>(command: T): T {
  command.addOption(
    new Option(
      "--debug-address <host:port>",
      "meshd's debug HTTP interface (meshd --httpAddr), used without --xds-address; env MESHCTL_DEBUG_ADDRESS; " +
        "with -c, --context or KUBECONFIG and neither given: port-forward to the app=meshd pod of -i",
    ).default(Deno.env.get("MESHCTL_DEBUG_ADDRESS") || DEFAULT_DEBUG_ADDRESS),
  );
  command.addOption(new Option("--timeout <duration>", "time before failing, e.g. 30s, 1m").default("30s"));
  command.addOption(
    new Option(
      "--xds-address <host[:port]>",
      "read meshd over xDS (debug requests) at this address instead of --debug-address",
    ),
  );
  command.addOption(
    new Option(
      "--xds-port <port>",
      `meshd's xDS port when --xds-address has none (default ${DEFAULT_XDS_PORT})`,
    ),
  );
  command.addOption(
    new Option(
      "--cert-dir <dir>",
      `xDS client certificates: ${CERT_DIR_FILES.certChain} and ${CERT_DIR_FILES.key} (a mesh identity), ` +
        `${CERT_DIR_FILES.root} (verifies meshd)`,
    ),
  );
  command.addOption(
    new Option("--authority <name>", "name meshd's certificate must carry (default: the --xds-address host)"),
  );
  command.addOption(
    new Option("--insecure [bool]", "skip verifying meshd's certificate").argParser(parseBool),
  );
  command.addOption(
    new Option("--plaintext [bool]", "plain-text HTTP/2, no TLS (meshd's --grpcAddr)").argParser(parseBool),
  );
  command.addOption(
    new Option(
      "--xds-token-file <file>",
      "bearer token for --xds-address (e.g. from `meshd token`); env MESHCTL_XDS_TOKEN holds one as text",
    ),
  );
  command.addOption(
    new Option(
      "--xds-label <selector>",
      "meshd pod label selector (e.g. app=meshd) in -i's namespace: port-forward to its --xds-port " +
        "through the orchestrator (pods/portforward), with a token from it",
    ),
  );
  return command;
}

/**
 * Parses `--timeout` (a Go duration).
 *
 * @throws Error naming the flag and value
 */
export function timeoutMs(value: string): number {
  const ns = parseDuration(value);
  if (ns === undefined || ns <= 0n) {
    throw new Error(`--timeout: "${value}" is not a positive duration such as 30s`);
  }
  return Number(ns / 1_000_000n);
}

/** `host:port` from `--xds-address`, with `--xds-port` when the address has no port. */
function xdsTarget(address: string, port: unknown): string {
  const p = port === undefined ? DEFAULT_XDS_PORT : Number(port);
  if (!Number.isInteger(p) || p <= 0 || p > 65535) {
    throw new Error(`--xds-port: "${port}" is not a port number`);
  }
  if (/^\[[^\]]+\]:\d+$/.test(address) || /^[^:]+:\d+$/.test(address)) return address;
  if (address === "" || /[:\]]$/.test(address)) {
    throw new Error(`--xds-address: "${address}" is not host[:port]`);
  }
  return address.includes(":") && !address.startsWith("[") ? `[${address}]:${p}` : `${address}:${p}`;
}

/** Reads a file of a flag, or returns undefined when `optional` and it does not exist. */
function readFlagFile(flag: string, path: string, optional = false): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch (e) {
    if (optional && e instanceof Deno.errors.NotFound) return undefined;
    throw new Error(`${flag}: cannot read ${path}: ${(e as Error).message}`);
  }
}

function xdsClient(opts: Record<string, unknown>, timeout: number): XdsDebugClient {
  const address = xdsTarget(String(opts.xdsAddress), opts.xdsPort);
  const dir = opts.certDir === undefined ? undefined : String(opts.certDir);
  const fromDir = (file: string, optional: boolean) =>
    dir === undefined ? undefined : readFlagFile("--cert-dir", join(dir, file), optional);
  const chain = fromDir(CERT_DIR_FILES.certChain, true);
  const key = fromDir(CERT_DIR_FILES.key, chain === undefined);
  const rootsPem = fromDir(CERT_DIR_FILES.root, opts.insecure === true || opts.plaintext === true);
  const tokenFile = opts.xdsTokenFile === undefined ? undefined : String(opts.xdsTokenFile);
  const token = tokenFile ? readFlagFile("--xds-token-file", tokenFile)!.trim() : Deno.env.get(XDS_TOKEN_ENV);
  if (opts.plaintext === true && (opts.insecure === true || opts.authority !== undefined)) {
    throw new Error("--plaintext uses no TLS: --insecure and --authority do not apply");
  }
  return new XdsDebugClient(address, {
    timeoutMs: timeout,
    plaintext: opts.plaintext === true,
    insecure: opts.insecure === true,
    authority: opts.authority === undefined ? undefined : String(opts.authority),
    rootsPem,
    clientCertificate: chain !== undefined && key !== undefined
      ? { certChainPem: chain, privateKeyPem: key }
      : undefined,
    token: token || undefined,
  });
}

/**
 * The meshd debug source the debug flags name: over xDS with `--xds-address`, else meshd's debug
 * HTTP interface: through a port-forward to meshd's pod when the orchestrator is chosen
 * (orch/meshd_forward.ts), else at `--debug-address`.
 *
 * @throws Error naming the flag: `--xds-label`, an xDS-only flag without `--xds-address`, a bad
 *   `--timeout` or `--xds-port`, an unreadable `--cert-dir` file or token file, TLS without roots
 */
export function meshdClient(opts: Record<string, unknown>): MeshdDebugSource {
  if (opts.xdsLabel !== undefined) {
    throw new Error("--xds-label selects meshd pods through the orchestrator, which --lab replaces");
  }
  const timeout = timeoutMs(String(opts.timeout));
  if (opts.xdsAddress !== undefined) return xdsClient(opts, timeout);
  for (const [key, flag] of XDS_ONLY) {
    if (opts[key] !== undefined) {
      throw new Error(`${flag} applies to debug requests over xDS: give meshd's address with --xds-address`);
    }
  }
  // Set by orch/meshd_forward.ts when the orchestrator is chosen: a port-forward to meshd's pod.
  const forwarded = opts.orchMeshdSource;
  if (typeof forwarded === "function") return (forwarded as (ms: number) => MeshdDebugSource)(timeout);
  return new MeshdClient(String(opts.debugAddress), timeout);
}
