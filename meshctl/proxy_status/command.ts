/**
 * `meshctl proxy-status [<target>]` (alias `ps`; meshctl seed, "proxy-status"): per proxy and xDS
 * type, the last version meshd sent and the last the proxy acknowledged (meshd's /debug/syncz);
 * with a target, the diff between what meshd would send it now and what it holds.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import type { TypeSyncStatus } from "../../shared/internal/xds/sync_status.ts";
import type { CliIo } from "../cli_io.ts";
import { meshdClient } from "../debug_flags.ts";
import { structured, table } from "../output.ts";
import { addProxyFlags, readConfigDump, targetProxy } from "../proxy_admin.ts";
import { formatSyncDiff, type MeshdProxyDump, syncDiff } from "./diff.ts";

interface SyncEntry {
  proxy: string;
  workload: string;
  connection: string;
  types: TypeSyncStatus[];
}

/** SYNCED (the last response was ACKed), NOT SENT, STALE (sent, not answered yet) or NACKED. */
function status(t: TypeSyncStatus): string {
  if (t.lastSentNonce === "") return "NOT SENT";
  if (t.lastNack !== undefined && t.lastAckedNonce !== t.lastSentNonce) return "NACKED";
  return t.lastAckedNonce === t.lastSentNonce ? "SYNCED" : "STALE";
}

function shortName(workload: string, proxy: string): string {
  return workload ? workload.split("/").reverse().join(".") : proxy;
}

/** Builds `proxy-status` (built twice: top level and under `experimental`). */
export function proxyStatusCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("proxy-status").alias("ps")
    .description(
      "Last xDS version meshd sent to each proxy and the last it acknowledged, per type; with a proxy, the " +
        "diff between what meshd would send it now and what it holds",
    )
    .argument("[target]", "[<type>/]<name>[.<namespace>] of a proxy")
    .addOption(new Option("-f, --file <dump>", "the proxy's side of the diff from a saved /config_dump"))
    .addOption(
      new Option("-o, --output <format>", "short, json or yaml").choices(["short", "json", "yaml"]).default(
        "short",
      ),
    )
    .option("-r, --revision <revision>", "control plane revision (no effect: one meshd)");
  addProxyFlags(cmd);
  cmd.action(async (target, opts, command) => {
    const client = meshdClient(command.optsWithGlobals());
    if (target === undefined) {
      const syncz = await client.json<SyncEntry[]>("/debug/syncz");
      const rows = syncz.flatMap((s) =>
        s.types.map((t) => ({
          name: shortName(s.workload, s.proxy),
          proxy: s.proxy,
          type: t.typeUrl.split(".").pop()!,
          status: status(t),
          lastSent: t.lastSentVersion,
          lastAcked: t.lastAckedVersion,
          nacks: t.nacks,
          lastNack: t.lastNack ?? "",
        }))
      ).sort((a, b) => a.name.localeCompare(b.name) || a.type.localeCompare(b.type));
      if (opts.output !== "short") return io.stdout(structured(rows, opts.output as "json" | "yaml"));
      if (rows.length === 0) return io.stdout(`no proxy is connected to meshd at ${client.address}\n`);
      io.stdout(table(
        ["NAME", "TYPE", "STATUS", "LAST SENT", "LAST ACKED", "NACKS"],
        rows.map((r) => [r.name, r.type, r.status, r.lastSent || "-", r.lastAcked || "-", String(r.nacks)]),
      ));
      return;
    }
    const proxy = await targetProxy(client, target, command);
    const meshd = await client.json<MeshdProxyDump>(
      `/debug/config_dump?proxyID=${encodeURIComponent(proxy.workload)}`,
    );
    const diffs = syncDiff(meshd, await readConfigDump(target, command));
    if (opts.output !== "short") return io.stdout(structured(diffs, opts.output as "json" | "yaml"));
    io.stdout(formatSyncDiff(diffs));
  });
  return cmd;
}
