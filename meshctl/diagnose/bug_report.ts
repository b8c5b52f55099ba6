/**
 * `meshctl bug-report` (meshctl seed, "bug-report"; istioctl's `bug-report`): collects cluster
 * objects and container logs into `bug-report.tar.gz` in `--output-dir` (default the working
 * directory). Collected: the API server's version; Namespaces, Pods, Services, Deployments, Events,
 * the webhook configurations, the mesh's and Istio's kinds, ConfigMaps and Secrets of the mesh
 * namespace (Secrets' data only with `--full-secrets`); the log of each container the
 * `--include`/`--exclude` specs select (bug_report_spec.ts), limited to `--start-time`/`--duration`
 * and `--end-time`. `--timeout` (default 30m) stops fetching: the archive keeps what was fetched and
 * lists what was not in `errors.txt`, as the seed says. `--dry-run` prints the fetches and writes
 * nothing. `--rq-concurrency` (0: 32) bounds concurrent requests. `-f` is a YAML file whose keys
 * (the flags' long names, camelCase or as written) replace the flags' values, lists included.
 *
 * Partial: a log the API server does not serve (the test API server has no `pods/log`) is recorded as
 * an error in the archive; `--critical-errs` and `--ignore-errs` have no effect (no importance
 * ranking: every selected log is kept); meshd's debug state is not collected (use
 * `x internal-debug`).
 *
 * @module
 */
import { Command, type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { join } from "node:path";
import { parse as parseYaml, stringify } from "yaml";
import type { CliIo } from "../cli_io.ts";
import { commandOrchClient, type OrchClient } from "../orch/orch_client.ts";
import { collectArray, parseBool } from "../../shared/internal/cli/pflag.ts";
import { buildInfo, parseDuration } from "../../shared/mod.ts";
import { ACCEPTED_API_VERSIONS, KINDS } from "../../shared/mod.ts";
import { pluralOf } from "../analyze/live/cluster_input.ts";
import { DEFAULT_EXCLUDE, logSelected, type LogSpec, parseLogSpec } from "./bug_report_spec.ts";
import { labelsOf, type Obj, obj, objs } from "./kube_json.ts";

/** One thing to fetch into the archive. */
interface Task {
  file: string;
  what: string;
  fetch: (signal: AbortSignal) => Promise<string>;
}

function durationMs(flag: string, text: string): number {
  const ns = parseDuration(text);
  if (ns === undefined || ns < 0n) throw new Error(`${flag}: "${text}" is not a duration such as 30s or 1h`);
  return Number(ns / 1_000_000n);
}

function time(flag: string, text: string): Date {
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) {
    throw new Error(`${flag}: "${text}" is not a time such as 2026-11-25T10:00:00Z`);
  }
  return d;
}

/** The time range of the logs: `[start, end]`, start undefined for the infinite past. */
export function logRange(
  o: { startTime?: string; endTime?: string; duration: string },
  now: Date,
): { start?: Date; end: Date } {
  const end = o.endTime ? time("--end-time", o.endTime) : now;
  const duration = durationMs("--duration", o.duration);
  if (o.startTime && duration > 0) throw new Error("--start-time and --duration exclude each other");
  if (o.startTime) return { start: time("--start-time", o.startTime), end };
  return duration > 0 ? { start: new Date(end.getTime() - duration), end } : { end };
}

/** Keeps the lines of a `timestamps=true` log up to `end` (a line without a timestamp is kept). */
export function linesUntil(log: string, end: Date): string {
  return log.split("\n").filter((line) => {
    const t = Date.parse(line.slice(0, line.indexOf(" ")));
    return Number.isNaN(t) || t <= end.getTime();
  }).join("\n");
}

/** The Deployment owning a pod through its ReplicaSet (`<deployment>-<pod-template-hash>`). */
function deploymentOf(pod: Obj): string | undefined {
  const hash = labelsOf(pod.metadata, "labels")["pod-template-hash"];
  const rs = objs(obj(pod.metadata).ownerReferences).find((r) => r.kind === "ReplicaSet");
  const name = typeof rs?.name === "string" ? rs.name : undefined;
  return name && hash && name.endsWith(`-${hash}`) ? name.slice(0, -hash.length - 1) : undefined;
}

const REDACTED = "(redacted: --full-secrets)";

/**
 * Hides a Secret's values: `data`, `stringData` (a server may keep it), and kubectl's last-applied
 * annotation, which holds a copy of them.
 */
export function redactSecret(s: Obj): void {
  for (const field of ["data", "stringData"]) {
    if (s[field] !== undefined) {
      s[field] = Object.fromEntries(Object.keys(obj(s[field])).map((k) => [k, REDACTED]));
    }
  }
  const annotations = obj(obj(s.metadata).annotations);
  if (annotations["kubectl.kubernetes.io/last-applied-configuration"] !== undefined) {
    annotations["kubectl.kubernetes.io/last-applied-configuration"] = REDACTED;
  }
}

function objectTasks(orch: OrchClient, fullSecrets: boolean): Task[] {
  const ns = encodeURIComponent(orch.meshNamespace);
  const lists: [string, string][] = [
    ["namespaces", "/api/v1/namespaces"],
    ["pods", "/api/v1/pods"],
    ["services", "/api/v1/services"],
    ["deployments", "/apis/apps/v1/deployments"],
    ["events", "/api/v1/events"],
    ["mutatingwebhookconfigurations", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"],
    [
      "validatingwebhookconfigurations",
      "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    ],
    [`${orch.meshNamespace}/configmaps`, `/api/v1/namespaces/${ns}/configmaps`],
    [`${orch.meshNamespace}/secrets`, `/api/v1/namespaces/${ns}/secrets`],
    ...KINDS.flatMap((k) =>
      ACCEPTED_API_VERSIONS[k.group].filter((v) => v.endsWith("/v1")).map((v): [string, string] => [
        `${pluralOf(k.kind)}.${v.split("/")[0]}`,
        `/apis/${v}/${pluralOf(k.kind)}`,
      ])
    ),
  ];
  const tasks: Task[] = lists.map(([name, path]) => ({
    file: `cluster/${name}.yaml`,
    what: `GET ${path}`,
    fetch: async (signal) => {
      const items = objs((await orch.api.json<{ items?: unknown[] }>("GET", path, { signal })).items);
      if (name.endsWith("/secrets") && !fullSecrets) {
        for (const s of items) redactSecret(s);
      }
      return stringify(items);
    },
  }));
  tasks.unshift({
    file: "cluster/version.json",
    what: "GET /version",
    fetch: async (signal) =>
      JSON.stringify(await orch.api.json("GET", "/version", { signal }), null, 2) + "\n",
  });
  return tasks;
}

async function logTasks(
  orch: OrchClient,
  includes: LogSpec[],
  excludes: LogSpec[],
  range: { start?: Date; end: Date },
): Promise<Task[]> {
  const pods = objs((await orch.api.json<{ items?: unknown[] }>("GET", "/api/v1/pods")).items);
  const tasks: Task[] = [];
  for (const p of pods) {
    const meta = obj(p.metadata);
    const namespace = String(meta.namespace), pod = String(meta.name);
    const spec = obj(p.spec);
    for (const c of [...objs(spec.initContainers), ...objs(spec.containers)]) {
      const container = String(c.name);
      const target = {
        namespace,
        deployment: deploymentOf(p),
        pod,
        labels: labelsOf(meta, "labels"),
        annotations: labelsOf(meta, "annotations"),
        container,
      };
      if (!logSelected(includes, excludes, target)) continue;
      const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/log`;
      const query: Record<string, string> = { container, timestamps: "true" };
      if (range.start) query.sinceTime = range.start.toISOString();
      tasks.push({
        file: `logs/${namespace}/${pod}/${container}.log`,
        what: `GET ${path}?container=${container}`,
        fetch: async (signal) => {
          const r = await orch.api.request("GET", path, { query, signal });
          const text = await r.text();
          if (!r.ok) throw new Error(`${r.status} ${text.slice(0, 200)}`);
          return linesUntil(text, range.end);
        },
      });
    }
  }
  return tasks;
}

/** Runs tasks, at most `concurrency` at once, until done or `signal` aborts; returns the failures. */
async function runTasks(
  tasks: Task[],
  dir: string,
  concurrency: number,
  signal: AbortSignal,
): Promise<string[]> {
  const errors: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const t = tasks[next++];
      if (signal.aborted) {
        errors.push(`${t.file}: not fetched: --timeout expired`);
        continue;
      }
      try {
        const text = await t.fetch(signal);
        await Deno.mkdir(join(dir, t.file, ".."), { recursive: true });
        await Deno.writeTextFile(join(dir, t.file), text);
      } catch (e) {
        errors.push(`${t.file}: ${signal.aborted ? "not fetched: --timeout expired" : (e as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, worker));
  return errors;
}

/** Reads `-f`: a YAML mapping whose keys replace the flags' values. */
async function overlayConfig(file: string, opts: Record<string, unknown>): Promise<void> {
  let doc: unknown;
  try {
    doc = parseYaml(await Deno.readTextFile(file));
  } catch (e) {
    throw new Error(`--filename ${file}: ${(e as Error).message}`);
  }
  for (const [k, v] of Object.entries(obj(doc))) {
    const key = k.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    if (!(key in opts) && !["startTime", "endTime", "dir", "outputDir"].includes(key)) {
      throw new Error(`--filename ${file}: unknown key "${k}"`);
    }
    opts[key] = Array.isArray(v) ? v.map(String) : typeof v === "boolean" ? v : String(v);
  }
}

/** Builds `bug-report` with `bug-report version`. */
export function bugReportCommand(io: CliIo): CommandUnknownOpts {
  const cmd = new Command("bug-report")
    .description(
      "Collect cluster objects and container logs into bug-report.tar.gz (partial: logs the API server does not " +
        "serve are recorded as errors; --critical-errs and --ignore-errs have no effect)",
    )
    .option("--critical-errs <glob>", "no effect: no importance ranking", collectArray, new Array<string>())
    .option("--dir <dir>", "directory for temporary files")
    .option("--dry-run", "print what would be fetched; fetch and write nothing")
    .option("--duration <duration>", "how far back from --end-time; 0 unlimited", "0s")
    .option("--end-time <time>", "end of the log range (RFC 3339); default now")
    .option(
      "--exclude <spec>",
      `exclude spec, repeatable (default ${DEFAULT_EXCLUDE})`,
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option("-f, --filename <file>", "YAML whose keys replace the flags' values")
    .option("--full-secrets", "include Secrets' data")
    .option("--ignore-errs <glob>", "no effect: no importance ranking", collectArray, new Array<string>())
    .option("--include <spec>", "include spec, repeatable", collectArray, new Array<string>())
    .option("--istio-namespace <ns>", "namespace of the control plane (default -i's)")
    .option("--output-dir <dir>", "directory of the archive (default the working directory)")
    .option("--rq-concurrency <n>", "concurrent requests; 0 means 32", "0")
    .option("--start-time <time>", "start of the log range (RFC 3339); exclusive with --duration")
    .option("--timeout <duration>", "stop fetching after this; the archive keeps what was fetched", "30m");
  cmd.action(async (raw, command) => {
    const opts = raw as Record<string, unknown> & typeof raw;
    if (opts.filename) await overlayConfig(String(opts.filename), opts);
    if (opts.criticalErrs.length > 0 || opts.ignoreErrs.length > 0) {
      io.stderr("warning: --critical-errs and --ignore-errs have no effect (every selected log is kept)\n");
    }
    const range = logRange(
      { startTime: opts.startTime, endTime: opts.endTime, duration: opts.duration },
      new Date(),
    );
    const includes = opts.include.map(parseLogSpec);
    const excludes = (opts.exclude ?? [DEFAULT_EXCLUDE]).map(parseLogSpec);
    const concurrency = Number(opts.rqConcurrency) > 0 ? Number(opts.rqConcurrency) : 32;
    const timeout = durationMs("--timeout", opts.timeout);
    const orch = commandOrchClient(command);
    if (opts.istioNamespace) orch.meshNamespace = opts.istioNamespace;
    const signal = AbortSignal.timeout(timeout);
    let dir: string | undefined;
    try {
      const tasks = [
        ...objectTasks(orch, opts.fullSecrets === true),
        ...await logTasks(orch, includes, excludes, range),
      ];
      if (opts.dryRun) {
        for (const t of tasks) io.stdout(`${t.what} -> ${t.file}\n`);
        return;
      }
      dir = await Deno.makeTempDir({ prefix: "bug-report-", ...(opts.dir ? { dir: opts.dir } : {}) });
      const errors = await runTasks(tasks, dir, concurrency, signal);
      if (errors.length > 0) await Deno.writeTextFile(join(dir, "errors.txt"), errors.join("\n") + "\n");
      const archive = join(opts.outputDir ?? Deno.cwd(), "bug-report.tar.gz");
      const tar = await new Deno.Command("tar", { args: ["-czf", archive, "-C", dir, "."], stderr: "piped" })
        .output();
      if (!tar.success) throw new Error(`tar: ${new TextDecoder().decode(tar.stderr).trim()}`);
      if (signal.aborted) {
        io.stderr(`--timeout ${opts.timeout} expired: the archive holds what was fetched (see errors.txt)\n`);
      }
      io.stderr(`${tasks.length - errors.length} of ${tasks.length} fetched\n`);
      io.stdout(`Creating an archive at ${archive}.\nDone.\n`);
    } finally {
      await orch.close();
      if (dir) await Deno.remove(dir, { recursive: true });
    }
  });
  cmd.addCommand(
    new Command("version").description("Print build information")
      .addOption(new Option("-o, --output <format>", "yaml or json").choices(["yaml", "json"] as const))
      .option("-s, --short [bool]", "print only the version; --short=false for full", parseBool, true)
      .action((opts) => {
        const info = buildInfo();
        const doc = { clientVersion: opts.short && !opts.output ? { version: info.version } : info };
        if (opts.output === "json") return io.stdout(JSON.stringify(doc, null, 2) + "\n");
        if (opts.output === "yaml") return io.stdout(stringify(doc));
        io.stdout(opts.short ? `client version: ${info.version}\n` : stringify(doc));
      }),
  );
  return cmd;
}
