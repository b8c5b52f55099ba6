/**
 * Reaching one proxy's admin interface (proxy/docs/admin.md) from a command: the target resolved
 * through meshd, or a saved `/config_dump` given with `--file`. Shared by proxy-config, proxy-stats
 * and proxy-status.
 *
 * @module
 */
import { type Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { addDebugFlags, meshdClient, timeoutMs } from "./debug_flags.ts";
import { labConnectorOf } from "./lab_connector.ts";
import { httpRequest, type MeshdDebugSource } from "./meshd_client.ts";
import { adminAddress, type ConnectedProxy, findProxy, parseTarget } from "./proxy_target.ts";
import { globalOptions } from "./global_options.ts";
import { orchestratorChosen, orchProxyAdmin } from "./orch/proxy_forward.ts";
import { isObject, type JsonObject, objectAt } from "./json_fields.ts";

/** The admin port of the seed's `--proxy-admin-port` default. */
export const DEFAULT_ADMIN_PORT = 15000;

/** Envoy's admin config dump: `{"configs": [{"@type": ..., ...}]}`. */
export interface ConfigDump {
  /** The sections, each with its `@type`. */
  configs: JsonObject[];
  /** Any other field, kept as read (`proxy-config all -o json` prints the dump whole). */
  readonly [field: string]: unknown;
}

/** Whether a parsed JSON value looks like a config dump: an object with a `configs` list. */
export function looksLikeConfigDump(value: unknown): boolean {
  return isObject(value) && Array.isArray(value.configs);
}

/**
 * Decodes a parsed config dump, once, where it is read.
 *
 * @param what the file or address, for errors
 * @throws Error naming `what` when there is no `configs` list, or the field path of a section that
 *   is not an object
 */
export function configDumpOf(value: unknown, what: string): ConfigDump {
  if (!isObject(value) || !Array.isArray(value.configs)) {
    throw new Error(`${what}: not a config dump: no "configs" array`);
  }
  return { ...value, configs: value.configs.map((c, i) => objectAt(c, `${what}: configs[${i}]`)) };
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Adds --proxy-admin-port and the debug flags (to find the proxy through meshd). */
export function addProxyFlags<T extends Command<unknown[], Record<string, unknown>>>(command: T): T {
  command.addOption(
    new Option(
      "--proxy-admin-port <port>",
      "the proxy's admin port (default: the port the proxy advertises, else 15000)",
    ),
  );
  return addDebugFlags(command);
}

/** One proxy's admin interface, found through meshd. */
export interface ProxyAdmin {
  /** `127.0.0.1:<port>`. */
  address: string;
  proxy: ConnectedProxy;
  get(path: string): Promise<string>;
  post(path: string): Promise<string>;
}

function port(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    throw new Error(`--proxy-admin-port: ${JSON.stringify(value)} is not a port number (1-65535)`);
  }
  return n;
}

/**
 * The connected proxy of a target `[<type>/]<name>[.<namespace>]` (namespace default: `-n`, else
 * `default`): through meshd's registry, and with `--lab` also by the lab's workload names.
 *
 * @throws Error naming the target and the proxies that are connected
 */
export function targetProxy(
  client: MeshdDebugSource,
  target: string,
  cmd: CommandUnknownOpts,
): Promise<ConnectedProxy> {
  const namespace = globalOptions(cmd).namespace || "default";
  const parsed = parseTarget(target, namespace);
  return labConnectorOf(cmd)?.findProxy(client, parsed) ?? findProxy(client, parsed);
}

/**
 * Resolves a target to its proxy's admin interface (with `--lab`, through a port-forward; when the
 * orchestrator is chosen, a pod's admin port through pods/portforward: orch/proxy_forward.ts).
 *
 * @throws Error naming the target, meshd's address or the admin address when something is not found
 */
export async function proxyAdmin(target: string, cmd: CommandUnknownOpts): Promise<ProxyAdmin> {
  const opts: Record<string, unknown> = cmd.optsWithGlobals();
  const timeout = timeoutMs(String(opts.timeout));
  if (orchestratorChosen(cmd)) {
    const orch = await orchProxyAdmin(cmd, target, port(opts.proxyAdminPort) ?? DEFAULT_ADMIN_PORT);
    return adminOf(orch.address, orch.proxy, `the admin interface of proxy ${target} (${orch.via})`, timeout);
  }
  const proxy = await targetProxy(meshdClient(opts), target, cmd);
  let address = adminAddress(proxy, port(opts.proxyAdminPort), DEFAULT_ADMIN_PORT);
  let what = `the admin interface of proxy ${target} (${proxy.proxy})`;
  const lab = labConnectorOf(cmd);
  if (lab) {
    const forwarded = await lab.adminAddress(proxy, Number(address.split(":")[1]));
    address = forwarded.address;
    what += ` (${forwarded.via})`;
  }
  return adminOf(address, proxy, what, timeout);
}

function adminOf(address: string, proxy: ConnectedProxy, what: string, timeout: number): ProxyAdmin {
  return {
    address,
    proxy,
    get: (path) => httpRequest(address, path, { what, timeoutMs: timeout }),
    post: (path) => httpRequest(address, path, { what, method: "POST", timeoutMs: timeout }),
  };
}

/**
 * Reads a config dump: the file of `--file`, else the live proxy of the target.
 *
 * @throws Error naming the file (unreadable, not JSON, not a dump) or what was not found
 */
export async function readConfigDump(
  target: string | undefined,
  cmd: CommandUnknownOpts,
): Promise<ConfigDump> {
  const file: unknown = cmd.optsWithGlobals().file;
  let text: string;
  let what: string;
  if (typeof file === "string" && file !== "") {
    what = file;
    try {
      text = await Deno.readTextFile(file);
    } catch (e) {
      throw new Error(
        `--file ${file}: ${e instanceof Deno.errors.NotFound ? "no such file" : messageOf(e)}`,
      );
    }
  } else {
    if (!target) {
      throw new Error(`${cmd.name()} needs a proxy, [<type>/]<name>[.<namespace>], or --file <config dump>`);
    }
    const admin = await proxyAdmin(target, cmd);
    what = `${admin.address}/config_dump`;
    text = await admin.get("/config_dump");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new Error(`${what}: not JSON: ${messageOf(e)}`);
  }
  return configDumpOf(parsed, what);
}
