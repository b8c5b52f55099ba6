/**
 * The kubelet's readiness probes as shell lines run inside the pod's network namespace (pure): an
 * `httpGet` probe is curl to `<host or pod IP>:<port><path>` (HTTPS without verification, as the
 * kubelet), passing on 200–399; `tcpSocket` a connect; `exec` the command. Named ports resolve
 * through the container's ports. meshd's injector rewrites application probes to the proxy's
 * `/app-health/<container>/readyz` on 15020 (meshd/webhooks/probe_rewrite.ts): those run like any other.
 * gRPC probes are not run (the container then counts as probed by its ports).
 *
 * @module
 */

/** The probe fields read. */
export interface ProbeSpec {
  httpGet?: {
    path?: string;
    port: number | string;
    host?: string;
    scheme?: string;
    httpHeaders?: { name: string; value: string }[];
  };
  tcpSocket?: { port: number | string; host?: string };
  exec?: { command?: string[] };
  timeoutSeconds?: number;
  periodSeconds?: number;
}

/** A container as the probes see it. */
export interface ProbedContainer {
  name: string;
  ports?: { name?: string; containerPort: number }[];
  readinessProbe?: ProbeSpec;
}

function q(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

function portOf(c: ProbedContainer, port: number | string): number | undefined {
  if (typeof port === "number") return port;
  if (/^\d+$/.test(port)) return Number(port);
  return c.ports?.find((p) => p.name === port)?.containerPort;
}

/**
 * The shell line that succeeds when the container's readiness probe passes; undefined when it has
 * none the agent runs (no probe, or gRPC).
 *
 * @throws Error naming the container when a named port is not among its ports (the kubelet fails it too)
 */
export function readinessScript(c: ProbedContainer, podIP: string): string | undefined {
  const p = c.readinessProbe;
  if (!p) return undefined;
  const timeout = p.timeoutSeconds ?? 1;
  if (p.httpGet) {
    const port = portOf(c, p.httpGet.port);
    if (port === undefined) {
      throw new Error(`container ${c.name}: readinessProbe: port ${p.httpGet.port} is not a container port`);
    }
    const scheme = (p.httpGet.scheme ?? "HTTP").toLowerCase();
    const host = p.httpGet.host || podIP;
    const path = p.httpGet.path ?? "/";
    const headers = (p.httpGet.httpHeaders ?? []).flatMap((h) => ["-H", q(`${h.name}: ${h.value}`)]);
    const url = `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}${
      path.startsWith("/") ? "" : "/"
    }${path}`;
    return `code=$(curl -sk -o /dev/null -w '%{http_code}' --max-time ${timeout} ${headers.join(" ")} ${
      q(url)
    }); ` +
      `[ "$code" -ge 200 ] && [ "$code" -lt 400 ]`;
  }
  if (p.tcpSocket) {
    const port = portOf(c, p.tcpSocket.port);
    if (port === undefined) {
      throw new Error(
        `container ${c.name}: readinessProbe: port ${p.tcpSocket.port} is not a container port`,
      );
    }
    return `timeout ${timeout} bash -c ${
      q(`exec 3<>/dev/tcp/${p.tcpSocket.host || podIP}/${port}`)
    } 2>/dev/null`;
  }
  if (p.exec?.command?.length) return `timeout ${timeout} ${p.exec.command.map(q).join(" ")} >/dev/null 2>&1`;
  return undefined;
}

/** How often a ready pod is probed again, ms: the shortest `periodSeconds` (default 10 s). */
export function probePeriodMs(containers: ProbedContainer[]): number {
  const periods = containers.flatMap((c) => c.readinessProbe ? [c.readinessProbe.periodSeconds ?? 10] : []);
  return (periods.length ? Math.min(...periods) : 10) * 1000;
}

/**
 * The pod's readiness check, one shell script: per application container its readiness probe, else
 * a connect to each of its container ports (on 127.0.0.1 with the sidecar, where applications listen,
 * else the pod IP); with the sidecar also its `/ready` on the admin port 15000.
 *
 * @throws Error from {@link readinessScript}
 */
export function readinessCheck(containers: ProbedContainer[], podIP: string, sidecar: boolean): string {
  const lines: string[] = [];
  for (const c of containers) {
    if (c.name === "mesh-proxy" || c.name === "istio-proxy") continue;
    const probe = readinessScript(c, podIP);
    if (probe !== undefined) lines.push(`${probe} || exit 1`);
    else {
      const host = sidecar ? "127.0.0.1" : podIP;
      for (const p of c.ports ?? []) {
        lines.push(`(exec 3<>/dev/tcp/${host}/${p.containerPort}) 2>/dev/null || exit 1`);
      }
    }
  }
  if (sidecar) {
    lines.push(
      `[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 http://127.0.0.1:15000/ready)" = 200 ] || exit 1`,
    );
  }
  return lines.join("\n") || "true";
}
