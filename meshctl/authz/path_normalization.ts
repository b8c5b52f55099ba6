/**
 * The path normalization `meshctl experimental authz` applies before matching `paths`: the option
 * in force for the proxy it evaluates (`meshConfig.pathNormalization.normalization`, which meshd
 * pushes to every proxy), so that its verdict on e.g. `//headers` is the proxy's. Read from a
 * config dump's listener `http_connection_manager.path_normalization` (proxy/admin/config_dump.ts),
 * from meshd's `/debug/mesh` (`pathNormalization`), or the `--path-normalization` flag; else
 * DEFAULT_PROXY_SETTINGS' option, and the output says which was used and where it came from.
 *
 * Source: Istio's "Security best practices: path normalization"; Envoy's HttpConnectionManager
 * `normalize_path`, `merge_slashes` and `path_with_escaped_slashes_action`.
 *
 * @module
 */
import {
  DEFAULT_PROXY_SETTINGS,
  normalizePath,
  PATH_NORMALIZATIONS,
  PathError,
  type PathNormalization,
} from "../../shared/mod.ts";
import { DUMP_TYPES } from "../proxy_config/sections.ts";
import { isObject, oneOf } from "../json_fields.ts";
import type { ConfigDump } from "../proxy_admin.ts";

/** The option used and where it came from, e.g. `the config dump's inbound listener on port 8000`. */
export interface NormalizationInForce {
  option: PathNormalization;
  from: string;
}

function checked(value: unknown, where: string): PathNormalization {
  return oneOf(PATH_NORMALIZATIONS, value, where);
}

/** The option of a mesh that says nothing, with why. */
export function defaultNormalization(why: string): NormalizationInForce {
  return { option: DEFAULT_PROXY_SETTINGS.pathNormalization, from: `default: ${why}` };
}

/**
 * The option a dumped proxy applies: its inbound listener on `port`, else the first listener that
 * shows one (meshd pushes one option to every listener of a proxy).
 *
 * @param what the file, for errors
 * @throws Error naming the file and the field path when the value is not an option
 */
export function normalizationFromDump(
  dump: ConfigDump,
  port: number | undefined,
  what: string,
): NormalizationInForce {
  const section = dump.configs.find((c) => c["@type"] === DUMP_TYPES.listeners);
  const listeners: unknown[] = Array.isArray(section?.dynamic_listeners) ? section.dynamic_listeners : [];
  // A listener without the fields is one that shows no option: the dump's other readers judge its shape.
  const field = (o: unknown, key: string): unknown => isObject(o) ? o[key] : undefined;
  const shown = listeners.flatMap((entry, i) => {
    const l = field(field(entry, "active_state"), "listener");
    const normalization = field(field(l, "http_connection_manager"), "path_normalization");
    if (normalization === undefined) return [];
    const where =
      `${what}: listeners: dynamic_listeners[${i}].active_state.listener.http_connection_manager` +
      ".path_normalization";
    return [{
      option: checked(normalization, where),
      inbound: field(l, "traffic_direction") === "INBOUND",
      port: field(field(field(l, "address"), "socket_address"), "port_value"),
      name: String(field(l, "name") ?? i),
    }];
  });
  const exact = shown.find((l) => l.inbound && port !== undefined && l.port === port);
  const chosen = exact ?? shown.find((l) => l.inbound) ?? shown[0];
  if (chosen === undefined) {
    return defaultNormalization("the config dump's listeners show no path_normalization");
  }
  return { option: chosen.option, from: `the config dump's listener ${chosen.name}` };
}

/**
 * The option meshd pushes, from its `/debug/mesh` page's `pathNormalization`.
 *
 * @param where meshd's address, for errors
 * @throws Error naming meshd and the field when the value is not an option
 */
export function normalizationFromMeshd(value: unknown, where: string): NormalizationInForce {
  // The same words over HTTP and over xDS, whose addresses differ: the mesh config is meshd's either way.
  if (value === undefined) return defaultNormalization("meshd does not show its pathNormalization");
  return { option: checked(value, `${where}: /debug/mesh pathNormalization`), from: "meshd's mesh config" };
}

/** The normalized path `explain` matches, as the proxy computes it. */
export interface NormalizedRequestPath extends NormalizationInForce {
  /** The path `paths` match (query dropped). */
  path: string;
}

/**
 * Normalizes a request target (`--path`) with the option in force.
 *
 * @throws Error naming `--path` when the proxy refuses the target with 400 (`#`, `%00`, ...)
 */
export function normalizeWith(target: string, n: NormalizationInForce): NormalizedRequestPath {
  try {
    return { ...n, path: normalizePath(target, n.option).path };
  } catch (e) {
    if (!(e instanceof PathError)) throw e;
    throw new Error(`--path: the proxy answers 400 before authorization: ${e.message}`);
  }
}

/** The output line, e.g. `path normalization: BASE (from the config dump's listener inbound|...)`. */
export function normalizationText(n: NormalizationInForce & { path?: string }): string {
  return `path normalization: ${n.option} (${n.from.startsWith("default") ? "" : "from "}${n.from})` +
    (n.path === undefined ? "" : `; path matched as ${n.path}`) + "\n";
}
