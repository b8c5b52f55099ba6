/**
 * A real `meshd discovery --kubeconfig` process for tests that need several at once (replicas): its
 * output, its debug and monitoring ports, and signals.
 *
 * @module
 */
import { discoveryEnv, discoveryPermissions, MAIN, ROOT } from "../../../meshd/cli_test_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";

/** One running meshd. */
export interface MeshdProcess {
  /** stdout and stderr so far. */
  output(): string;
  /** GETs `path` from --httpAddr (the debug interface) as text. */
  debug(path: string): Promise<string>;
  /** The value of an unlabelled metric on --monitoringAddr. */
  metric(name: string): Promise<number>;
  /** Waits until the output matches `re`. @throws with the output when it does not within `ms` */
  waitFor(re: RegExp, ms: number): Promise<void>;
  /** Sends `signal` and waits for the exit; returns the exit code. Idempotent. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/**
 * Starts meshd on the Kubernetes API of `kubeconfig` (no --configDir) with `vars` (plus a CA in a
 * temporary ROOT_CA_DIR and the debug interface on), and waits until it is ready.
 */
export async function startMeshd(kubeconfig: string, vars: Record<string, string>): Promise<MeshdProcess> {
  const dir = await Deno.makeTempDir({ prefix: "meshd-replica-" });
  const httpPort = freePort(), monitoringPort = freePort();
  const env: Record<string, string> = {
    ...discoveryEnv(`${dir}/ca`),
    ENABLE_DEBUG_ON_HTTP: "true",
    POD_NAMESPACE: "mesh-system",
  };
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      ...discoveryPermissions(`${dir}/ca`),
      MAIN,
      "discovery",
      ...["--configDir", "", "--kubeconfig", kubeconfig, "--meshConfig", `${dir}/no-mesh-config`],
      ...["--grpcAddr", "127.0.0.1:0", "--secureGRPCAddr", "127.0.0.1:0", "--httpsAddr", "127.0.0.1:0"],
      ...["--httpAddr", `127.0.0.1:${httpPort}`, "--monitoringAddr", `127.0.0.1:${monitoringPort}`],
      ...["--ctrlz_port", "0"],
    ],
    cwd: ROOT,
    clearEnv: true,
    env: { ...env, ...vars },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
  };
  const reading = Promise.all([collect(child.stdout), collect(child.stderr)]);
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  let stopping: Promise<number> | undefined;
  const p: MeshdProcess = {
    output: () => text,
    async debug(path) {
      const r = await fetch(`http://127.0.0.1:${httpPort}${path}`);
      return await r.text();
    },
    async metric(name) {
      const body = await (await fetch(`http://127.0.0.1:${monitoringPort}/metrics`)).text();
      const line = body.split("\n").find((l) => l.startsWith(`${name} `));
      if (line === undefined) throw new Error(`no metric ${name}`);
      return Number(line.slice(name.length + 1));
    },
    async waitFor(re, ms) {
      const deadline = Date.now() + ms;
      while (!re.test(text)) {
        if (exited || Date.now() > deadline) {
          throw new Error(
            `meshd ${exited ? "exited" : `did not log ${re} within ${ms} ms`}; output:\n${text}`,
          );
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    stop: (signal = "SIGTERM") =>
      stopping ??= (async () => {
        if (!exited) child.kill(signal);
        const { code } = await status;
        await reading;
        await Deno.remove(dir, { recursive: true });
        return code;
      })(),
  };
  try {
    await p.waitFor(/meshd ready/, 30_000);
  } catch (e) {
    await p.stop("SIGKILL");
    throw e;
  }
  return p;
}

/** Polls `cond` every 100 ms. @throws naming `what` with the replicas' output when it is not true within `ms` */
export async function until(
  cond: () => Promise<boolean>,
  ms: number,
  what: string,
  ps: MeshdProcess[],
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) {
      throw new Error(`${what} within ${ms} ms; meshd output:\n${ps.map((p) => p.output()).join("\n---\n")}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
