/**
 * `deno task kube-api`: runs the test Kubernetes API server until SIGINT/SIGTERM and prints where its
 * kubeconfig is. See README.md beside this file for what it implements and its limits.
 *
 * @module
 */
import { Command } from "@commander-js/extra-typings";
import { startKubeApi } from "./mod.ts";

const program = new Command("kube-api")
  .description(
    "A test Kubernetes API server in memory (HTTPS, bearer token). Not a real cluster: no scheduler, no kubelet,\n" +
      "no controllers, no RBAC enforcement, no server-side apply, no CRD schema validation; see\n" +
      "deploy/lab/kube_api/README.md.",
  )
  .option("--port <port>", "TCP port (0: a free one)", "0")
  .option("--host <address>", "address to listen on", "127.0.0.1")
  .option("--dir <dir>", "state directory for kubeconfig, ca.crt and token (default: a new temporary one)")
  .option(
    "--history <events>",
    "events kept for watch resumption (older resourceVersions get 410 Gone)",
    "1000",
  )
  .option("--bookmark-ms <ms>", "interval of BOOKMARK events", "5000")
  .option("--san <name...>", "more DNS names or IPs for the serving certificate")
  .option("-v, --verbose", "log each request");

program.parse();
const o = program.opts();
const num = (v: string, flag: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) program.error(`${flag}: "${v}" is not a non-negative integer`);
  return n;
};
const api = await startKubeApi({
  port: num(o.port, "--port"),
  hostname: o.host,
  dir: o.dir,
  historySize: num(o.history, "--history") || 1,
  bookmarkMs: num(o.bookmarkMs, "--bookmark-ms") || 1000,
  extraNames: o.san,
  verbose: o.verbose,
});
console.log(JSON.stringify({ url: api.url, kubeconfig: api.kubeconfig, dir: api.dir }));
const stop = async (): Promise<void> => {
  await api.stop();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
