/**
 * The quickstart (README command 1): Istio's "Mutual TLS Migration" task on the local lab, with
 * real httpbin and curl. It brings up foo and bar (httpbin and sleep with sidecars) and legacy
 * (without), probes every sleep → httpbin pair, applies PeerAuthentication STRICT in foo, then
 * mesh-wide, probing after each, checks X-Forwarded-Client-Cert, prints every matrix and tears the
 * lab down. Exit code 0 when every matrix is the task's, 1 otherwise; with no root or no `ip`, it
 * says so and skips (exit 0). `--config-source kube`: the lab's config, the policies included, goes
 * through kubectl into the test Kubernetes API server, which meshd reads with --kubeconfig
 * (deploy/lab/README.md, "Config from the Kubernetes API").
 *
 * @module
 */
import { join } from "node:path";
import { Command, Option } from "@commander-js/extra-typings";
import {
  labApply,
  labDown,
  type LabState,
  labUnavailable,
  labUp,
  probe,
  workloadOf,
  xfccOf,
} from "../lab/mod.ts";
import { formatMatrix, NAMESPACES, type Stage } from "./probe_matrix.ts";
import { settleMatrix } from "./live_matrix.ts";
import { adoptSamplePods, applySamples } from "./kube_samples.ts";

const HERE = new URL(".", import.meta.url).pathname;
const TOPOLOGY = join(HERE, "../lab/quickstart.yaml");
const KUBERNETES_TOPOLOGY = join(HERE, "../lab/kubernetes.yaml");
/** How long a policy may take to show in the matrix (meshd's debounce and push, the proxies' update). */
const SETTLE_MS = 10_000;

const encoder = new TextEncoder();
const print = (t: string) => Deno.stdout.writeSync(encoder.encode(t + "\n"));

/** Probes until the matrix is the stage's (or SETTLE_MS passed), prints it; true when as expected. */
async function stage(state: LabState, name: Stage): Promise<boolean> {
  const { got, differences: diff, ms } = await settleMatrix(state, name, SETTLE_MS);
  print(`\n== ${name} (matrix settled after ${ms} ms)`);
  for (const line of formatMatrix(got)) print(line);
  print(diff.length === 0 ? "-- as expected" : `-- UNEXPECTED:\n${diff.map((d) => `   ${d}`).join("\n")}`);
  return diff.length === 0;
}

/** XFCC on /headers: present when both sides are proxied, absent towards (and from) legacy. */
async function xfcc(state: LabState): Promise<boolean> {
  print("\n== X-Forwarded-Client-Cert seen by httpbin (GET /headers)");
  let ok = true;
  for (const from of NAMESPACES) {
    for (const to of NAMESPACES) {
      const p = await probe(workloadOf(state, `${from}/sleep`), `http://httpbin.${to}:8000/headers`);
      let x: string | undefined;
      try {
        x = xfccOf(p);
      } catch {
        print(`sleep.${from} to httpbin.${to}: no httpbin answer (${p.status}, exit ${p.exitCode})`);
        ok = false;
        continue;
      }
      const want = from !== "legacy" && to !== "legacy";
      const uri = `URI=spiffe://cluster.local/ns/${from}/sa/sleep`;
      const good = want ? x !== undefined && x.split(";").includes(uri) : x === undefined;
      ok &&= good;
      print(`sleep.${from} to httpbin.${to}: ${x ?? "absent"}${good ? "" : "   <- UNEXPECTED"}`);
    }
  }
  return ok;
}

async function main(args: string[]): Promise<number> {
  const options = new Command("quickstart")
    .description("Istio's Mutual TLS Migration task on the local mesh lab (deploy/lab/README.md); needs root")
    .addOption(
      new Option(
        "--config-source <source>",
        "files: the lab writes meshd's --configDir; kube: the lab's config and the policies go through " +
          "kubectl into the test Kubernetes API server (deploy/lab/kube_api), meshd reads it with --kubeconfig",
      ).choices(["files", "kube"] as const).default("files" as const),
    )
    .option(
      "--kubernetes",
      "the lab as a Kubernetes node (lab up --kubernetes): Istio's httpbin and sleep samples applied with " +
        "kubectl, injected by meshd's webhook, run by the node agent",
    )
    .parse(args, { from: "user" })
    .opts();
  const kubernetes = options.kubernetes === true;
  const source = kubernetes ? "kube" : options.configSource;
  const unavailable = labUnavailable();
  if (unavailable) {
    print(`quickstart: skipped: ${unavailable}. Run ./dev quickstart as root.`);
    return 0;
  }
  const name = `qs${Deno.pid}`;
  const started = Date.now();
  const down = async () => {
    const r = await labDown(name);
    print(`\nlab ${name} down: ${r.processes} processes ended, ${r.netns.length} namespaces deleted`);
  };
  const onSignal = () => void down().finally(() => Deno.exit(130));
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  const results: boolean[] = [];
  try {
    print(
      kubernetes
        ? `$ lab up --kubernetes --name ${name} --subnet 10.250.0.0/24`
        : `$ lab up ${TOPOLOGY} --name ${name} --subnet 10.250.0.0/24 --config-source ${source}`,
    );
    const state = await labUp(kubernetes ? KUBERNETES_TOPOLOGY : TOPOLOGY, {
      name,
      subnet: "10.250.0.0/24",
      configSource: source,
      kubernetes,
      log: (l) => print(`  ${l}`),
    });
    if (kubernetes) {
      for (const l of await applySamples(name)) print(l);
      const t = Date.now();
      const pods = await adoptSamplePods(state, 60_000);
      print(`  ${pods.length} pods ready (${Date.now() - t} ms after the samples were applied)`);
    }
    results.push(await stage(state, "no policy"));
    results.push(await xfcc(state));
    for (
      const [file, next] of [
        ["peer_authentication_foo_strict.yaml", "STRICT in foo"],
        ["peer_authentication_mesh_strict.yaml", "STRICT mesh-wide"],
      ] as const
    ) {
      print(`\n$ ${source === "kube" ? "kubectl apply -f" : "lab apply"} deploy/quickstart/${file}`);
      for (const l of await labApply(name, [join(HERE, file)])) if (source === "kube") print(`  ${l}`);
      results.push(await stage(state, next));
    }
  } catch (e) {
    print(`\nquickstart: ${(e as Error).message}`);
    results.push(false);
  } finally {
    await down();
  }
  const failed = results.filter((r) => !r).length;
  print(
    `\nquickstart: ${results.length - failed} of ${results.length} checks as expected, ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return failed === 0 ? 0 : 1;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
