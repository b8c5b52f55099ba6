/**
 * `meshctl experimental proxy-stats` (alias `es`; meshctl seed, "experimental"): a proxy's statistics
 * from its admin `/stats` (`short`: Envoy's text, `json`, `yaml`) or `/stats/prometheus` (`prom`).
 * `--type clusters` keeps the `cluster.*` statistics. `prom-merged` (application and proxy metrics
 * merged, Istio's port 15020) is not available: the proxy has no merged metrics endpoint.
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { structured } from "../output.ts";
import { addProxyFlags, proxyAdmin } from "../proxy_admin.ts";

/** Builds the `proxy-stats` command. */
export function proxyStatsCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("proxy-stats").alias("es")
    .description("Retrieve a proxy's statistics (short: Envoy's text; json, yaml; prom: Prometheus text)")
    .argument("<target>", "[<type>/]<name>[.<namespace>] of the proxy")
    .addOption(
      new Option("-o, --output <format>", "short, json, yaml, prom (prom-merged is not available)")
        .choices(["short", "json", "yaml", "prom", "prom-merged"]).default("short"),
    )
    .addOption(
      new Option("-t, --type <type>", "server (all) or clusters (cluster.*)").choices(["server", "clusters"])
        .default("server"),
    )
    .option("-l, --selector <selector>", "label selector (no effect: one proxy per target)");
  addProxyFlags(cmd);
  cmd.action(async (target, opts, command) => {
    if (opts.output === "prom-merged") {
      throw new Error(
        "-o prom-merged is not available: the proxy has no merged application metrics endpoint; use -o prom",
      );
    }
    const admin = await proxyAdmin(target, command);
    const filter = opts.type === "clusters" ? `filter=${encodeURIComponent("^cluster\\.")}` : "";
    if (opts.output === "prom") {
      const text = await admin.get("/stats/prometheus");
      const keep = opts.type === "clusters"
        ? text.split("\n").filter((l) => /^(# TYPE )?envoy_cluster_/.test(l)).join("\n") + "\n"
        : text;
      return io.stdout(keep);
    }
    if (opts.output === "short") return io.stdout(await admin.get(`/stats${filter ? `?${filter}` : ""}`));
    const json = JSON.parse(await admin.get(`/stats?format=json${filter ? `&${filter}` : ""}`));
    io.stdout(structured(json, opts.output as "json" | "yaml"));
  });
  return cmd;
}
