/**
 * The flags meshctl's live commands share: where meshd's debug interface is (`--debug-address`),
 * `--timeout`, and the seed's debug flags for reaching meshd over xDS (`--xds-address`, `--cert-dir`,
 * ...), which are accepted but refused with a reason: meshctl reads meshd's debug HTTP interface
 * instead of Istio's debug-over-xDS (see meshctl_client.ts).
 *
 * @module
 */
import { type Command, Option } from "@commander-js/extra-typings";
import { parseDuration } from "../shared/mod.ts";
import { DEFAULT_DEBUG_ADDRESS, MeshdClient } from "./meshd_client.ts";

/** The seed's debug flags that would need debug over xDS; given, they are an error naming the way that works. */
const XDS_FLAGS: readonly [string, string][] = [
  ["--xds-address <address>", "xDS endpoint host:port (not supported: use --debug-address)"],
  ["--cert-dir <dir>", "xDS endpoint certificates (not supported: use --debug-address)"],
  ["--authority <name>", "xDS subject alternative name (not supported: use --debug-address)"],
  ["--xds-label <selector>", "daemon pod label selector (not supported: one meshd per --debug-address)"],
  ["--xds-port <port>", "daemon xDS port (not supported: use --debug-address)"],
];

/** Adds --debug-address, --timeout and the seed's xDS flags to a command. */
export function addDebugFlags<T extends Command<unknown[], Record<string, unknown>>>(command: T): T {
  command.addOption(
    new Option(
      "--debug-address <host:port>",
      "meshd's debug interface (meshd --httpAddr); env MESHCTL_DEBUG_ADDRESS",
    ).default(Deno.env.get("MESHCTL_DEBUG_ADDRESS") || DEFAULT_DEBUG_ADDRESS),
  );
  command.addOption(new Option("--timeout <duration>", "time before failing, e.g. 30s, 1m").default("30s"));
  for (const [flags, help] of XDS_FLAGS) command.addOption(new Option(flags, help));
  command.addOption(new Option("--insecure [bool]", "skip server verification (not supported: plain HTTP)"));
  command.addOption(new Option("--plaintext [bool]", "plain-text xDS (not supported: plain HTTP already)"));
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

/**
 * The meshd client the debug flags name.
 *
 * @throws Error when an xDS flag was given (naming it and the flag to use) or --timeout is bad
 */
export function meshdClient(opts: Record<string, unknown>): MeshdClient {
  for (const [flags] of XDS_FLAGS) {
    const name = flags.split(" ")[0];
    const key = name.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    if (opts[key] !== undefined) {
      throw new Error(
        `${name} is not supported: meshctl reads meshd's debug interface over HTTP, not debug requests over ` +
          `xDS; give meshd's --httpAddr with --debug-address (now ${opts.debugAddress})`,
      );
    }
  }
  return new MeshdClient(String(opts.debugAddress), timeoutMs(String(opts.timeout)));
}
