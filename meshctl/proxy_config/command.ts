/**
 * `meshctl proxy-config` (meshctl seed, "proxy-config"): a proxy's configuration from its
 * `/config_dump` (live, through meshd, or a saved dump with `--file`), and its log levels;
 * `rootca-compare` of two proxies' ROOTCA, and `ecds` (always empty: the proxy has no extension
 * config discovery; see README).
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { structured } from "../output.ts";
import { globalOptions } from "../global_options.ts";
import { objectAt, oneOf, stringMapAt } from "../json_fields.ts";
import { addProxyFlags, type ConfigDump, proxyAdmin, readConfigDump } from "../proxy_admin.ts";
import { parseTarget } from "../proxy_target.ts";
import { LOGGERS } from "../../shared/internal/logging/levels.ts";
import { ecdsDump, ecdsTable, rootCaPem, rootCaReport, rootCasShareCertificate } from "./rootca.ts";
import {
  bootstrap,
  bootstrapSummary,
  clusters,
  clustersTable,
  endpoints,
  endpointsTable,
  type Filters,
  listeners,
  listenersTable,
  routes,
  routesTable,
  secrets,
  secretsTable,
} from "./sections.ts";

const FORMATS = ["short", "json", "yaml"] as const;
type Format = typeof FORMATS[number];

/** What one subcommand shows: the entries for json/yaml, the text for short. */
interface View {
  entries: unknown;
  short: string;
}

function filtersOf(opts: Record<string, unknown>): Filters {
  const f: Filters = {};
  for (const k of ["address", "direction", "fqdn", "subset", "cluster", "status", "name", "type"] as const) {
    const value = opts[k];
    if (typeof value === "string") f[k] = value;
  }
  if (opts.port !== undefined) {
    const n = Number(opts.port);
    if (!Number.isInteger(n) || n < 0 || n > 65535) {
      throw new Error(`--port: "${opts.port}" is not a port number`);
    }
    f.port = n;
  }
  return f;
}

const VIEWS: Record<string, (d: ConfigDump, f: Filters, verbose: boolean) => View> = {
  cluster: (d, f) => {
    const list = clusters(d, f);
    return { entries: list, short: clustersTable(list) };
  },
  listener: (d, f, verbose) => {
    const list = listeners(d, f);
    return { entries: list, short: listenersTable(list, verbose) };
  },
  endpoint: (d, f) => {
    const list = endpoints(d, f);
    return { entries: list, short: endpointsTable(list) };
  },
  route: (d, f) => {
    const list = routes(d, f);
    return { entries: list, short: routesTable(list) };
  },
  secret: (d) => {
    const list = secrets(d);
    return { entries: list, short: secretsTable(list) };
  },
};

const SUBCOMMANDS: { name: string; aliases: string[]; description: string; filters: string[] }[] = [
  {
    name: "cluster",
    aliases: ["clusters", "c"],
    description: "Retrieve a proxy's clusters (Istio's cluster names: <direction>|<port>|<subset>|<fqdn>)",
    filters: ["direction", "fqdn", "port", "subset"],
  },
  {
    name: "listener",
    aliases: ["listeners", "l"],
    description: "Retrieve a proxy's listeners, with the inbound mutual TLS mode of each port",
    filters: ["address", "port", "type", "verbose"],
  },
  {
    name: "endpoint",
    aliases: ["endpoints", "ep"],
    description:
      "Retrieve a proxy's endpoints (from its config dump; no health checking yet, so all are HEALTHY)",
    filters: ["address", "cluster", "port", "status"],
  },
  {
    name: "route",
    aliases: ["routes", "r"],
    description:
      "Retrieve a proxy's routes (a gateway's, from Gateways and VirtualServices; a sidecar has none)",
    filters: ["name", "verbose"],
  },
  { name: "secret", aliases: ["secrets", "s"], description: "Retrieve a proxy's certificates", filters: [] },
];

const FILTER_OPTIONS: Record<string, () => Option> = {
  address: () => new Option("--address <ip>", "filter by address"),
  direction: () => new Option("--direction <direction>", "filter by direction: inbound or outbound"),
  fqdn: () => new Option("--fqdn <fqdn>", "filter by a substring of the service FQDN"),
  port: () => new Option("--port <port>", "filter by port"),
  subset: () => new Option("--subset <subset>", "filter by a substring of the subset"),
  type: () => new Option("--type <type>", "filter listeners by direction: INBOUND or OUTBOUND"),
  cluster: () => new Option("--cluster <name>", "filter endpoints by cluster name"),
  status: () => new Option("--status <status>", "filter endpoints by status, e.g. healthy"),
  name: () => new Option("--name <name>", "filter routes by name"),
  verbose: () => new Option("--verbose", "more columns"),
};

function output(cmd: CommandUnknownOpts): Format {
  return oneOf(FORMATS, cmd.optsWithGlobals().output, "--output");
}

function fileOption(): Option {
  return new Option("-f, --file <dump>", "read a saved /config_dump JSON instead of a live proxy");
}

/** Builds the `proxy-config` group. */
export function proxyConfigCommand(io: CliIo): CommandUnknownOpts {
  const group = new Command("proxy-config")
    .alias("pc")
    .description("Retrieve a proxy's configuration from its /config_dump (live through meshd, or --file)")
    .addOption(
      new Option("-o, --output <format>", "short, json or yaml").choices(FORMATS).default(
        "short",
      ),
    );
  addProxyFlags(group);

  for (const sub of SUBCOMMANDS) {
    const c = new Command(sub.name).aliases(sub.aliases).description(sub.description)
      .argument("[target]", "[<type>/]<name>[.<namespace>] of the proxy")
      .addOption(fileOption());
    for (const f of sub.filters) c.addOption(FILTER_OPTIONS[f]());
    c.action(async (target, _opts, cmd) => {
      const opts: Record<string, unknown> = cmd.opts();
      const view = VIEWS[sub.name](await readConfigDump(target, cmd), filtersOf(opts), Boolean(opts.verbose));
      const format = output(cmd);
      io.stdout(format === "short" ? view.short : structured(view.entries, format));
    });
    group.addCommand(c);
  }

  const all = new Command("all").alias("a").description("Retrieve a proxy's whole configuration")
    .argument("[target]", "[<type>/]<name>[.<namespace>] of the proxy")
    .addOption(fileOption());
  for (const f of ["address", "direction", "fqdn", "port", "subset", "type", "name", "verbose"]) {
    all.addOption(FILTER_OPTIONS[f]());
  }
  all.action(async (target, _opts, cmd) => {
    const opts: Record<string, unknown> = cmd.opts();
    const dump = await readConfigDump(target, cmd);
    const format = output(cmd);
    if (format !== "short") return io.stdout(structured(dump, format));
    const f = filtersOf(opts);
    io.stdout(
      Object.values(VIEWS).map((v) => v(dump, f, Boolean(opts.verbose)).short).join("\n"),
    );
  });
  group.addCommand(all);

  group.addCommand(
    new Command("bootstrap").alias("b").description(
      "Retrieve a proxy's bootstrap (default -o json; short: a summary)",
    )
      .argument("[target]", "[<type>/]<name>[.<namespace>] of the proxy")
      .addOption(fileOption())
      .action(async (target, _opts, cmd) => {
        const dump = await readConfigDump(target, cmd);
        const explicit = cmd.parent?.getOptionValueSource("output") === "cli";
        const format = explicit ? output(cmd) : "json";
        io.stdout(format === "short" ? bootstrapSummary(dump) : structured(bootstrap(dump), format));
      }),
  );

  group.addCommand(
    new Command("ecds").alias("ec")
      .description(
        "Retrieve a proxy's typed extension configuration (ECDS); partial: the proxy has no extension " +
          "config discovery, so it is always empty",
      )
      .argument("[target]", "[<type>/]<name>[.<namespace>] of the proxy")
      .addOption(fileOption())
      .action(async (target, _opts, cmd) => {
        const dump = await readConfigDump(target, cmd);
        const format = output(cmd);
        io.stdout(format === "short" ? ecdsTable(dump) : structured(ecdsDump(dump), format));
      }),
  );

  group.addCommand(rootCaCompareCommand(io));
  group.addCommand(logCommand(io));
  return group;
}

function rootCaCompareCommand(io: CliIo): CommandUnknownOpts {
  return new Command("rootca-compare").alias("rc")
    .description(
      "Compare the ROOTCA of two proxies' secrets, to check the connectivity between them; exit 1 when " +
        "they share no root certificate",
    )
    .argument("<target-1>", "[pod/]<name-1>[.<namespace-1>]")
    .argument("<target-2>", "[pod/]<name-2>[.<namespace-2>]")
    .action(async (first, second, _opts, cmd) => {
      const namespace = globalOptions(cmd).namespace || "default";
      const names = [first, second].map((t) => {
        const p = parseTarget(t, namespace);
        return `${p.name}.${p.namespace}`;
      });
      const roots = [];
      for (const [i, t] of [first, second].entries()) {
        roots.push({
          pem: rootCaPem(await readConfigDump(t, cmd), `proxy ${names[i]}`),
          what: `proxy ${names[i]}`,
        });
      }
      const match = rootCasShareCertificate(roots[0], roots[1]);
      const report = rootCaReport(names[0], names[1], match);
      if (!match) throw new Error(report);
      io.stdout(report + "\n");
    });
}

const LEVELS = ["trace", "debug", "info", "warning", "error", "critical", "off"];

function logCommand(io: CliIo): CommandUnknownOpts {
  return new Command("log").alias("o")
    .description(`Read or set a proxy's log levels (loggers: ${LOGGERS.join(", ")})`)
    .argument("<target>", "[<type>/]<name>[.<namespace>] of the proxy")
    .option(
      "--level <levels>",
      "<level> for all loggers, or <logger>:<level>,...; levels: " + LEVELS.join(", "),
    )
    .option("-r, --reset", "reset every logger to warning")
    .option("-l, --selector <selector>", "label selector (no effect: one proxy per target)")
    .action(async (target, opts, cmd) => {
      const admin = await proxyAdmin(target, cmd);
      const params: string[] = [];
      if (opts.reset) params.push("level=warning");
      for (const part of (opts.level ?? "").split(",").filter((p) => p !== "")) {
        const [logger, level] = part.includes(":") ? part.split(":") : ["", part];
        if (!LEVELS.includes(level)) {
          throw new Error(`--level: unknown level "${level}" in "${part}"; levels: ${LEVELS.join(", ")}`);
        }
        params.push(logger ? `paths=${encodeURIComponent(`${logger}:${level}`)}` : `level=${level}`);
      }
      const what = `${admin.address}/logging`;
      const json = objectAt(
        JSON.parse(
          await (params.length > 0
            ? admin.post(`/logging?${params.join("&")}&format=json`)
            : admin.get("/logging?format=json")),
        ),
        what,
      );
      const loggers = stringMapAt(objectAt(json.loggers, `${what}: loggers`), `${what}: loggers`);
      const format = output(cmd);
      if (format !== "short") return io.stdout(structured(loggers, format));
      io.stdout(
        `${admin.proxy.workload.split("/").reverse().join(".")}:\nactive loggers:\n` +
          Object.entries(loggers).map(([k, v]) => `  ${k}: ${v}\n`).join(""),
      );
    });
}
