/**
 * The test Kubernetes API server (see README.md beside this file): {@link startKubeApi} starts one and
 * writes a kubeconfig that kubectl and @kubernetes/client-node use unchanged.
 *
 * @module
 */
import { join } from "node:path";
import { kubeconfigText } from "./pki.ts";
import { type KubeApiOptions, type KubeApiServer, serveKubeApi } from "./server.ts";

export type { KubeApiOptions, KubeApiServer, RequestLogEntry } from "./server.ts";

/** A started server and the files it wrote. */
export interface StartedKubeApi {
  /** Path of the kubeconfig (cluster CA data, admin bearer token, namespace "default"). */
  kubeconfig: string;
  /** https://127.0.0.1:<port> */
  url: string;
  /** The state directory holding kubeconfig, ca.crt and token. */
  dir: string;
  server: KubeApiServer;
  /** Stops the server; removes the directory when startKubeApi made it. */
  stop(): Promise<void>;
}

/**
 * Starts a server and writes `kubeconfig`, `ca.crt` and `token` into `dir` (a new temporary directory
 * when absent, removed again by `stop()`). Objects live in memory only.
 */
export async function startKubeApi(opts: KubeApiOptions & { dir?: string } = {}): Promise<StartedKubeApi> {
  const made = opts.dir === undefined;
  const dir = opts.dir ?? await Deno.makeTempDir({ prefix: "kube-api-" });
  await Deno.mkdir(dir, { recursive: true });
  const server = await serveKubeApi(opts);
  const kubeconfig = join(dir, "kubeconfig");
  await Deno.writeTextFile(kubeconfig, kubeconfigText(server.url, server.caPem, server.token), {
    mode: 0o600,
  });
  await Deno.writeTextFile(join(dir, "ca.crt"), server.caPem);
  await Deno.writeTextFile(join(dir, "token"), server.token, { mode: 0o600 });
  return {
    kubeconfig,
    url: server.url,
    dir,
    server,
    async stop(): Promise<void> {
      await server.stop();
      if (made) await Deno.remove(dir, { recursive: true });
    },
  };
}
