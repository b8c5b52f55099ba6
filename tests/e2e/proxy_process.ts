/**
 * A real proxy process (proxy/main.ts) for end-to-end tests, bootstrapped against an in-process meshd
 * with a bootstrap token from the test CA; ready when its admin /ready answers 200.
 */
import { join } from "node:path";
import type { CertificateAuthority } from "../../meshd/ca/mod.ts";
import type { Meshd } from "../../proxy/agent/test_support.ts";
import { freePort } from "../../proxy/inbound/test_support.ts";

/** A running proxy process. */
export interface ProxyProc {
  child: Deno.ChildProcess;
  adminPort: number;
  /** Everything it wrote to stderr so far (its log). */
  stderr: () => string;
  stop(): Promise<void>;
}

/** Which workload the proxy stands for, and how to reach meshd. */
export interface ProxyProcessOptions {
  /** Test directory holding `root-cert.pem`; the token file is written there. */
  dir: string;
  ca: CertificateAuthority;
  /** Service account (namespace foo). */
  sa: string;
  /** WorkloadEntry name. */
  we: string;
  /** Workload address. */
  ip: string;
  /** `--labels`. */
  labels: string;
  /** Further flags (`--inbound`, `--outbound`, ...). */
  args: string[];
  /** meshd's address; default 127.0.0.1. */
  meshdIp?: string;
  /** `--proxyLogLevel`; default info. */
  logLevel?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts a proxy and waits (at most 20 s) until it is ready. */
export async function startProxyProcess(meshd: Meshd, o: ProxyProcessOptions): Promise<ProxyProc> {
  const { token } = await o.ca.issueBootstrapToken({ namespace: "foo", serviceAccount: o.sa });
  const tokenFile = join(o.dir, `${o.sa}.token`);
  await Deno.writeTextFile(tokenFile, token);
  const adminPort = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-env",
      "--allow-net",
      "--allow-sys",
      new URL("../../proxy/main.ts", import.meta.url).pathname,
      `--discoveryAddress=${o.meshdIp ?? "127.0.0.1"}:${meshd.securePort}`,
      "--namespace=foo",
      `--serviceAccount=${o.sa}`,
      `--workloadEntry=${o.we}`,
      `--labels=${o.labels}`,
      `--address=${o.ip}`,
      `--tokenFile=${tokenFile}`,
      `--rootCertFile=${join(o.dir, "root-cert.pem")}`,
      `--proxy-admin-port=${adminPort}`,
      "--concurrency=1",
      `--proxyLogLevel=${o.logLevel ?? "info"}`,
      ...o.args,
    ],
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1" },
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
  const deadline = Date.now() + 20_000;
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
      throw new Error(`proxy ${o.we} not ready within 20 s; stderr:\n${err}`);
    }
    await sleep(100);
  }
  return { child, adminPort, stderr: () => err, stop };
}
