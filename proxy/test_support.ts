/**
 * Test support: the real `proxy` program as a subprocess (the `proxy` task's permissions), with a
 * bootstrap token from the test's CA, started and waited for until /ready answers 200.
 *
 * @module
 */
import { PROXY_PERMISSION_FLAGS } from "../shared/internal/proxy_permissions.ts";
import { join } from "node:path";
import { freePort } from "../shared/internal/testing/free_port.ts";

/** A running proxy process. */
export interface ProxyProcess {
  child: Deno.ChildProcess;
  adminPort: number;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  stop(): Promise<void>;
}

/** Who the proxy is and where meshd is. */
export interface ProxyProcessOptions {
  /** Holds the token file; must contain meshd's root as `root-cert.pem`. */
  dir: string;
  /** Mints the bootstrap token: the test's CA, or a token issuer on a meshd process's ROOT_CA_DIR. */
  ca: { issueBootstrapToken(req: { namespace: string; serviceAccount: string }): Promise<{ token: string }> };
  discoveryAddress: string;
  namespace: string;
  serviceAccount: string;
  workloadEntry: string;
  address: string;
  /** `k=v,...`. */
  labels?: string;
  /** More flags, e.g. `--inbound=...`, `--type=router`. */
  args?: string[];
  /** `--concurrency`; default 1. */
  concurrency?: number;
  /** How long to wait for /ready; default 20 s. */
  readyTimeoutMs?: number;
  /** More environment variables (NO_COLOR is set). */
  env?: Record<string, string>;
  /** The program to run; default this checkout's `proxy/main.ts` (e.g. a bundle's `main.js`). */
  entry?: string;
}

/**
 * Starts the proxy and waits until it is ready.
 *
 * @throws Error with the proxy's stderr when it is not ready in time (it is killed then)
 */
export async function startProxyProcess(o: ProxyProcessOptions): Promise<ProxyProcess> {
  const { token } = await o.ca.issueBootstrapToken({
    namespace: o.namespace,
    serviceAccount: o.serviceAccount,
  });
  const tokenFile = join(o.dir, `${o.namespace}.${o.workloadEntry}.token`);
  await Deno.writeTextFile(tokenFile, token);
  const adminPort = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...PROXY_PERMISSION_FLAGS,
      o.entry ?? new URL("./main.ts", import.meta.url).pathname,
      `--discoveryAddress=${o.discoveryAddress}`,
      `--namespace=${o.namespace}`,
      `--serviceAccount=${o.serviceAccount}`,
      `--workloadEntry=${o.workloadEntry}`,
      ...(o.labels ? [`--labels=${o.labels}`] : []),
      `--address=${o.address}`,
      `--tokenFile=${tokenFile}`,
      `--rootCertFile=${join(o.dir, "root-cert.pem")}`,
      `--proxy-admin-port=${adminPort}`,
      `--concurrency=${o.concurrency ?? 1}`,
      "--proxyLogLevel=info",
      ...(o.args ?? []),
    ],
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1", ...o.env },
  }).spawn();
  let err = "";
  const reading = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (err += chunk) }),
  );
  const stop = async () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
    await child.status;
    await reading.catch(() => {});
  };
  const deadline = Date.now() + (o.readyTimeoutMs ?? 20_000);
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${adminPort}/ready`);
      await r.body?.cancel();
      if (r.status === 200) break;
    } catch {
      // admin not up yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`proxy ${o.namespace}/${o.workloadEntry} not ready in time; stderr:\n${err}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, adminPort, stderr: () => err, stop };
}
