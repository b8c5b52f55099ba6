/**
 * `meshctl dashboard` (aliases `dash`, `d`; meshctl seed, "dashboard"): forwards a local port to a
 * pod's web UI and opens it, as istioctl does, until interrupted.
 *
 * - `controlz [<type>/]<name>[.<ns>]` or `-l`: a meshd pod's ControlZ port (`--ctrlz_port`, 9876);
 * - `meshd-debug` (default: the pod labelled `app=meshd` in `-i`'s namespace): meshd's debug HTTP port 8080;
 * - `proxy` (and the deprecated `legacy-proxy`): a pod's proxy admin port 15000;
 * - `charts`, `metrics-ui`, `trace-ui-a`, `trace-ui-b`, `graph-ui`, `apm-ui`: the pods of the add-on's
 *   Service in `-i`'s namespace (grafana, prometheus, jaeger-query/tracing, zipkin, kiali, skywalking-ui),
 *   on `--ui-port`; when the Service is not installed they say so and exit 1.
 *
 * The forward goes through the API server's `pods/portforward` (meshctl/orch/port_forward.ts), as
 * istioctl's; a local relay puts it on `--address:--port`. `--address localhost` binds 127.0.0.1 and
 * ::1, and fails when neither is free. `--browser` (default true) runs `xdg-open`; `--browser=false`
 * only prints the URL.
 *
 * @module
 */
import { Command, type CommandUnknownOpts } from "@commander-js/extra-typings";
import type { CliIo } from "../cli_io.ts";
import { commandOrchClient, type OrchClient } from "../orch/orch_client.ts";
import { openOrchPortForward } from "../orch/port_forward.ts";
import { parseBool } from "../../shared/internal/cli/pflag.ts";
import { obj, objs } from "./kube_json.ts";
import { parseTarget } from "./check_inject.ts";

/** The add-on UIs: subcommand, Service names tried in order, default --ui-port, what it is. */
const ADDONS: readonly [string, string[], number, string][] = [
  ["charts", ["grafana"], 3000, "Grafana"],
  ["metrics-ui", ["prometheus"], 9090, "Prometheus"],
  ["trace-ui-a", ["tracing", "jaeger-query"], 16686, "Jaeger"],
  ["trace-ui-b", ["zipkin"], 9411, "Zipkin"],
  ["graph-ui", ["kiali"], 20001, "Kiali"],
  ["apm-ui", ["skywalking-ui"], 8080, "SkyWalking"],
];

/** A running forward. */
export interface Forward {
  /** `host:port` it listens on (the first listener's). */
  local: string;
  close(): void;
}

/**
 * Listens on `address:port` (`localhost`: 127.0.0.1 and ::1, at least one) and relays each connection
 * to `target`.
 *
 * @throws Error naming the address when nothing could be bound
 */
export function relay(address: string, port: number, target: { hostname: string; port: number }): Forward {
  const hosts = address === "localhost" ? ["127.0.0.1", "::1"] : [address];
  const listeners: Deno.TcpListener[] = [];
  let bound = port;
  const errors: string[] = [];
  for (const hostname of hosts) {
    try {
      const l = Deno.listen({ hostname, port: bound });
      bound = (l.addr as Deno.NetAddr).port;
      listeners.push(l);
    } catch (e) {
      errors.push(`${hostname}: ${(e as Error).message}`);
    }
  }
  if (listeners.length === 0) {
    throw new Error(`--address ${address}: cannot listen on port ${port}: ${errors.join("; ")}`);
  }
  const open = new Set<Deno.Conn>();
  for (const l of listeners) {
    (async () => {
      for await (const conn of l) {
        open.add(conn);
        Deno.connect(target).then(async (upstream) => {
          open.add(upstream);
          await Promise.allSettled([
            conn.readable.pipeTo(upstream.writable),
            upstream.readable.pipeTo(conn.writable),
          ]);
          open.delete(upstream);
          open.delete(conn);
        }, () => {
          open.delete(conn);
          conn.close();
        });
      }
    })().catch(() => {});
  }
  const first = listeners[0].addr as Deno.NetAddr;
  return {
    local: first.hostname.includes(":")
      ? `[${first.hostname}]:${first.port}`
      : `${first.hostname}:${first.port}`,
    close: () => {
      for (const l of listeners) l.close();
      for (const c of open) {
        try {
          c.close();
        } catch {
          // Closed by its peer already.
        }
      }
    },
  };
}

/** A pod to forward to. */
interface PodRef {
  namespace: string;
  name: string;
}

async function namedPod(orch: OrchClient, path: string): Promise<PodRef> {
  const meta = obj(obj(await orch.api.json("GET", path)).metadata);
  return { namespace: String(meta.namespace), name: String(meta.name) };
}

/** The first Running pod the selector matches (istioctl's choice), else the first one. */
async function podBySelector(orch: OrchClient, namespace: string, selector: string): Promise<PodRef> {
  const pods = objs(
    (await orch.api.json<{ items?: unknown[] }>(
      "GET",
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
      { query: { labelSelector: selector } },
    )).items,
  );
  const pod = pods.find((p) => obj(p.status).phase === "Running") ?? pods[0];
  if (!pod) throw new Error(`no pod matches ${selector} in namespace ${namespace}`);
  return { namespace, name: String(obj(pod.metadata).name) };
}

/** Forwards until SIGINT/SIGTERM, then closes the forwards and the client. */
async function serve(
  io: CliIo,
  orch: OrchClient,
  opts: { address: string; port: string; browser: boolean },
  target: PodRef & { port: number },
): Promise<void> {
  const tunnel = await openOrchPortForward(orch, target.namespace, target.name, target.port);
  const [host, tunnelPort] = [
    tunnel.localAddress.slice(0, tunnel.localAddress.lastIndexOf(":")),
    Number(tunnel.localAddress.slice(tunnel.localAddress.lastIndexOf(":") + 1)),
  ];
  let forward: Forward;
  try {
    forward = relay(opts.address, Number(opts.port), { hostname: host, port: tunnelPort });
  } catch (e) {
    await tunnel.close();
    throw e;
  }
  const url = `http://${forward.local}/`;
  io.stdout(`${url}\n`);
  io.stderr(
    `forwarding ${forward.local} to ${target.name}.${target.namespace}:${target.port} through pods/portforward; ` +
      "Ctrl-C to stop\n",
  );
  if (opts.browser) {
    try {
      await new Deno.Command("xdg-open", { args: [url], stdout: "null", stderr: "null" }).output();
    } catch {
      io.stderr(`could not open a browser (xdg-open): open ${url}\n`);
    }
  }
  await new Promise<void>((resolve) => {
    const stop = () => {
      Deno.removeSignalListener("SIGINT", stop);
      Deno.removeSignalListener("SIGTERM", stop);
      resolve();
    };
    Deno.addSignalListener("SIGINT", stop);
    Deno.addSignalListener("SIGTERM", stop);
  });
  forward.close();
  await tunnel.close();
}

function withForwardFlags(c: CommandUnknownOpts): void {
  c.option("--address <address>", "local address: an IP, or localhost (127.0.0.1 and ::1)", "localhost");
  c.option("--browser [bool]", "open a browser; --browser=false prints the URL only", parseBool, true);
  c.option("-p, --port <port>", "local port; 0 picks one", "0");
}

type ForwardOpts = {
  address: string;
  port: string;
  browser: boolean;
  selector?: string;
  ctrlz_port?: string;
};

function podCommand(
  io: CliIo,
  name: string,
  description: string,
  port: (opts: ForwardOpts) => number,
  defaultSelector?: string,
): CommandUnknownOpts {
  const c = new Command(name).description(description)
    .argument("[target]", "[<type>/]<name>[.<namespace>] of a pod")
    .option("-l, --selector <selector>", "label selector of the pod, instead of a name");
  withForwardFlags(c);
  if (name === "controlz") c.option("--ctrlz_port <port>", "ControlZ port", "9876");
  c.action(async (target, raw, command) => {
    const opts = raw as ForwardOpts;
    const orch = commandOrchClient(command);
    try {
      let pod: PodRef;
      if (target) {
        pod = await namedPod(
          orch,
          parseTarget(target.includes("/") ? target : `pod/${target}`, orch.namespace).path,
        );
      } else if (opts.selector ?? defaultSelector) {
        const ns = opts.selector ? orch.namespace : orch.meshNamespace;
        pod = await podBySelector(orch, ns, opts.selector ?? defaultSelector!);
      } else {
        throw new Error(`dashboard ${name}: give a pod or -l <selector>`);
      }
      await serve(io, orch, opts, { ...pod, port: port(opts) });
    } finally {
      await orch.close();
    }
  });
  return c;
}

function addonCommand(
  io: CliIo,
  [name, services, uiPort, what]: (typeof ADDONS)[number],
): CommandUnknownOpts {
  const c = new Command(name).description(`Open ${what} (forwards to its Service's pods when installed)`)
    .option("--ui-port <port>", `${what}'s port`, String(uiPort));
  withForwardFlags(c);
  c.action(async (raw, command) => {
    const opts = raw as ForwardOpts & { uiPort: string };
    const orch = commandOrchClient(command);
    try {
      let pod: PodRef | undefined;
      for (const svc of services) {
        const path = `/api/v1/namespaces/${encodeURIComponent(orch.meshNamespace)}/services/${svc}`;
        const found = await orch.api.json("GET", path).catch(() => undefined);
        if (!found) continue;
        const selector = Object.entries(obj(obj(obj(found).spec).selector)).map(([k, v]) => `${k}=${v}`);
        pod = await podBySelector(orch, orch.meshNamespace, selector.join(","));
        break;
      }
      if (!pod) {
        throw new Error(
          `${what} is not installed: no Service ${services.join(" or ")} in namespace ${orch.meshNamespace}`,
        );
      }
      await serve(io, orch, opts, { ...pod, port: Number(opts.uiPort) });
    } finally {
      await orch.close();
    }
  });
  return c;
}

/** Builds `dashboard`. */
export function dashboardCommand(io: CliIo): CommandUnknownOpts {
  const group = new Command("dashboard").aliases(["dash", "d"])
    .description(
      "Forward a local port (through the API server's pods/portforward) to a web UI and open it",
    );
  group.addCommand(podCommand(io, "controlz", "Open meshd's ControlZ", (o) => Number(o.ctrlz_port ?? 9876)));
  group.addCommand(podCommand(io, "meshd-debug", "Open meshd's debug interface", () => 8080, "app=meshd"));
  group.addCommand(podCommand(io, "proxy", "Open a proxy's admin interface", () => 15000));
  group.addCommand(podCommand(io, "legacy-proxy", "Deprecated: use proxy", () => 15000));
  for (const a of ADDONS) group.addCommand(addonCommand(io, a));
  return group;
}
