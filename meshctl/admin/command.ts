/**
 * `meshctl admin log` (alias `meshd`, `l`; meshctl seed, "admin"): read or change meshd's log levels
 * through ctrlz's `/scopej/` (meshd/monitoring/ctrlz.ts). ctrlz is reached at the host of
 * `--debug-address` (or of `--xds-address`) and `--ctrlz_port`.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { addDebugFlags, timeoutMs } from "../debug_flags.ts";
import { httpRequest } from "../meshd_client.ts";
import { hostOf } from "../../shared/internal/tls/meshd_channel.ts";
import { structured, table } from "../output.ts";

/** meshd's log levels (meshd seed). */
const LEVELS = ["none", "error", "warn", "info", "debug"];

/** One scope as ctrlz's `/scopej/` lists it (Istio's field names). */
export interface ScopeInfo {
  name: string;
  output_level: string;
  stack_trace_level: string;
  log_callers: boolean;
}

/**
 * ctrlz's `/scopej/` answer (`text`, from `address`), decoded once: a JSON array of {@link ScopeInfo}.
 *
 * @throws Error naming the address and the first entry or field that is not of that shape
 */
export function decodeScopes(text: string, address: string): ScopeInfo[] {
  const bad = (why: string) => new Error(`meshd's ctrlz at ${address}: /scopej/ ${why}`);
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    throw bad("is not JSON");
  }
  if (!Array.isArray(list)) throw bad("is not a JSON array of scopes");
  return list.map((entry: unknown, i) => {
    if (entry === null || typeof entry !== "object") throw bad(`[${i}] is not an object`);
    const fields = new Map<string, unknown>(Object.entries(entry));
    const text = (field: string): string => {
      const v = fields.get(field);
      if (typeof v !== "string") throw bad(`[${i}].${field} is not a string`);
      return v;
    };
    return {
      name: text("name"),
      output_level: text("output_level"),
      stack_trace_level: text("stack_trace_level"),
      log_callers: fields.get("log_callers") === true,
    };
  });
}

/**
 * Parses `<scope>:<level>,...` (a bare `<level>` means every scope).
 *
 * @throws Error naming the flag, the part and the accepted levels
 */
export function parseScopeLevels(flag: string, value: string): { scope: string; level: string }[] {
  return value.split(",").filter((p) => p !== "").map((part) => {
    const [scope, level] = part.includes(":") ? part.split(":") : ["", part];
    if (!LEVELS.includes(level)) {
      throw new Error(`${flag}: unknown level "${level}" in "${part}"; levels: ${LEVELS.join(", ")}`);
    }
    return { scope, level };
  });
}

/** Builds the `admin` group with its `log` command. */
export function adminCommand(io: CliIo): CommandUnknownOpts {
  const group = new Command("admin").alias("meshd").description("Manage meshd's configuration")
    .option("-l, --selector <selector>", "label selector (no effect: one meshd per address)", "app=meshd");
  const log = new Command("log").alias("l")
    .description("Read or change meshd's log levels per scope (ctrlz /scopej/)")
    .argument("[pod]", "meshd instance (no effect: the one at --debug-address or --xds-address)")
    .option("--ctrlz_port <port>", "ctrlz port of meshd", "9876")
    .option(
      "--level <levels>",
      `<scope>:<level>,... or <level> for every scope; levels: ${LEVELS.join(", ")}`,
    )
    .option("--stack-trace-level <levels>", "<scope>:<level>,... for stack traces; same levels")
    .option("--reset", "reset every scope's output level to info")
    .addOption(
      new Option("-o, --output <format>", "short, json or yaml").choices(["short", "json", "yaml"]).default(
        "short",
      ),
    )
    .option("-r, --revision <revision>", "control plane revision (no effect: one meshd)");
  addDebugFlags(log);
  log.action(async (_pod, opts) => {
    const o = opts as Record<string, unknown>;
    // ctrlz is HTTP on meshd's host: the host of --xds-address when given, else of --debug-address.
    const host = hostOf(String(o.xdsAddress ?? o.debugAddress));
    const address = `${host.includes(":") ? `[${host}]` : host}:${opts.ctrlz_port}`;
    const timeout = timeoutMs(String((opts as Record<string, unknown>).timeout));
    const what = "meshd's ctrlz (--ctrlz_port)";
    const get = async () =>
      decodeScopes(await httpRequest(address, "/scopej/", { what, timeoutMs: timeout }), address);
    const changes = new Map<string, Record<string, string>>();
    const all = (await get()).map((s) => s.name);
    const add = (scope: string, field: string, level: string) => {
      for (const s of scope ? [scope] : all) changes.set(s, { ...changes.get(s), [field]: level });
    };
    if (opts.reset) { for (const s of all) add(s, "output_level", "info"); }
    for (const { scope, level } of parseScopeLevels("--level", opts.level ?? "")) {
      add(scope, "output_level", level);
    }
    for (const { scope, level } of parseScopeLevels("--stack-trace-level", opts.stackTraceLevel ?? "")) {
      add(scope, "stack_trace_level", level);
    }
    for (const [scope, body] of changes) {
      if (!all.includes(scope)) {
        throw new Error(`scope "${scope}" not found in meshd at ${address}; scopes: ${all.join(", ")}`);
      }
      await httpRequest(address, `/scopej/${encodeURIComponent(scope)}`, {
        what,
        method: "PUT",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
        timeoutMs: timeout,
      });
    }
    const scopes = await get();
    if (opts.output !== "short") return io.stdout(structured(scopes, opts.output as "json" | "yaml"));
    io.stdout(table(
      ["ACTIVE SCOPE", "OUTPUT LEVEL", "STACK TRACE LEVEL"],
      scopes.map((s) => [s.name, s.output_level, s.stack_trace_level]),
    ));
  });
  group.addCommand(log);
  return group;
}
