/**
 * The scale bench's client processes (client.ts) as the runners (main.ts, floor.ts) drive them: spawn,
 * wait for an event from all of them, percentiles of their times.
 *
 * @module
 */
import type { ClientSpec } from "./client.ts";

/** A client process: its events as they arrive, and its stdin. */
export interface ClientProcess {
  pid: number;
  next(event: string, ms: number): Promise<Record<string, unknown>>;
  send(line: string): Promise<void>;
  /** Ends the process: SIGKILL, or with BENCH_CLIENT_PROFILE an `exit` line first (the profile is written at exit). */
  kill(): Promise<void>;
}

/** BENCH_CLIENT_PROFILE=<dir>: each client process writes a V8 CPU profile there when it exits. */
function profileArgs(): string[] {
  const dir = Deno.env.get("BENCH_CLIENT_PROFILE");
  return dir ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : [];
}

export function spawnClient(spec: ClientSpec): ClientProcess {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      ...profileArgs(),
      new URL("./client.ts", import.meta.url).pathname,
      JSON.stringify(spec),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const events: Record<string, unknown>[] = [];
  (async () => {
    let buf = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      const lines = buf.split("\n");
      buf = lines.pop()!;
      for (const l of lines) if (l.startsWith("{")) events.push(JSON.parse(l));
    }
  })();
  const writer = child.stdin.getWriter();
  return {
    pid: child.pid,
    async next(event, ms) {
      const deadline = Date.now() + ms;
      while (true) {
        const i = events.findIndex((e) => e.event === event);
        if (i >= 0) return events.splice(i, 1)[0];
        if (Date.now() > deadline) throw new Error(`client ${child.pid}: no ${event} within ${ms} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    send: (line) => writer.write(new TextEncoder().encode(`${line}\n`)),
    async kill() {
      if (profileArgs().length > 0) {
        await writer.write(new TextEncoder().encode("exit\n")).catch(() => {});
        const timer = new Promise((r) => setTimeout(r, 10_000));
        await Promise.race([child.status, timer]);
      }
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
    },
  };
}

/** Waits for `event` from every client, asking for a report when the phase times out. */
export async function all(
  cs: ClientProcess[],
  event: string,
  phaseMs: number,
): Promise<{ times: number[]; errors: number; closed: number; bytes: number }> {
  const deadline = Date.now() + phaseMs;
  const results = await Promise.all(cs.map(async (c) => {
    try {
      return await c.next(event, Math.max(0, deadline - Date.now()));
    } catch {
      await c.send("report");
      return await c.next(event, 30_000);
    }
  }));
  return {
    times: results.flatMap((r) => r.times as number[]),
    errors: results.reduce((n, r) => n + (r.errors as number), 0),
    closed: results.reduce((n, r) => n + (r.closedStreams as number), 0),
    bytes: results.reduce((n, r) => n + ((r.bytes as number | undefined) ?? 0), 0),
  };
}

export function percentiles(values: number[]): { p50: number; p99: number; max: number; missing: number } {
  const done = values.filter((v) => v >= 0).sort((a, b) => a - b);
  const at = (p: number) => done[Math.min(done.length - 1, Math.floor((p / 100) * done.length))] ?? -1;
  return {
    p50: Math.round(at(50)),
    p99: Math.round(at(99)),
    max: Math.round(done.at(-1) ?? -1),
    missing: values.length - done.length,
  };
}
