/**
 * The `lab port-forward [--name] <target> [<local>:]<remote>...` command: opens the forwards
 * (port_forward.ts), prints kubectl's lines, and closes them on SIGINT or SIGTERM.
 *
 * @module
 */
import {
  forwardTarget,
  openPortForward,
  parsePortSpec,
  type PortForward,
} from "../../shared/internal/lab/port_forward.ts";

/** Options of {@link labPortForward}. */
export interface LabPortForwardOptions {
  /** Local address to listen on. */
  address: string;
  /** Dial the target's lab address rather than its loopback. */
  podIp: boolean;
  log: (line: string) => void;
  error: (line: string) => void;
  /** Ends the forwards when aborted; default: SIGINT or SIGTERM. */
  signal?: AbortSignal;
  /** Where state directories live; default labsDir(). */
  dir?: string;
}

function signalsAbort(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const stop = () => controller.abort();
  const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
  for (const s of signals) Deno.addSignalListener(s, stop);
  return {
    signal: controller.signal,
    dispose: () => signals.forEach((s) => Deno.removeSignalListener(s, stop)),
  };
}

/**
 * Forwards `ports` of `target` (`meshd` or `<namespace>/<workload>`) of lab `lab` until stopped.
 *
 * @throws Error naming a bad port spec, an unknown target, or a port that cannot be bound (nothing
 *   stays open then)
 */
export async function labPortForward(
  lab: string,
  target: string,
  ports: string[],
  options: LabPortForwardOptions,
): Promise<void> {
  const specs = ports.map(parsePortSpec);
  const t = await forwardTarget(lab, target, { dir: options.dir });
  const host = options.podIp ? t.podAddress : "127.0.0.1";
  const stopped = options.signal ? { signal: options.signal, dispose: () => {} } : signalsAbort();
  const open: PortForward[] = [];
  try {
    for (const spec of specs) {
      const f = await openPortForward(t.netns, `${host}:${spec.remote}`, {
        localPort: spec.local,
        hostname: options.address,
        onConnection: () => options.log(`Handling connection for ${f.localPort}`),
        onError: (l) => options.error(`error forwarding port ${spec.remote} of ${target}: ${l}`),
      });
      open.push(f);
      options.log(`Forwarding from ${f.localAddress} -> ${spec.remote} (lab ${lab}, ${target}, ${host})`);
    }
    if (!stopped.signal.aborted) {
      await new Promise((r) => stopped.signal.addEventListener("abort", r, { once: true }));
    }
  } finally {
    stopped.dispose();
    await Promise.all(open.map((f) => f.close()));
  }
}
