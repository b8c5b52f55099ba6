/**
 * The proxy as it runs from its bundle (`deno task bundle:proxy`: `build/proxy/main.js` and the
 * Worker's `build/proxy/workers/worker.js`, every module and npm package in two files): a client
 * proxy (`--concurrency 1`, the data path inline) and a server proxy (`--concurrency 2`, two Worker
 * bundles) from a fresh bundle, configured by an in-process meshd with its CA under STRICT mutual
 * TLS, carry requests to an app; the server's counters prove mutual TLS and both Workers.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startCa, startMeshd, strictPairConfig } from "../meshd_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { type ProxyProcess, startProxyProcess } from "../../../proxy/test_support.ts";
import { within } from "../../../shared/internal/testing/deadline.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

/** The `bundle:proxy` task's command with `outdir` in place of build/proxy. */
async function bundle(outdir: string): Promise<void> {
  const task: string = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))).tasks["bundle:proxy"];
  const args = task.split(/\s+/).slice(1).map((a) => a === "build/proxy" ? outdir : a);
  assert.ok(args.includes(outdir), `the bundle:proxy task names --outdir build/proxy: ${task}`);
  const out = await new Deno.Command(Deno.execPath(), { args, cwd: ROOT, stdout: "piped", stderr: "piped" })
    .output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
}

/** One request to the app's service through the client proxy's outbound port; the whole answer. */
async function request(port: number): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new TextEncoder().encode(
      "GET / HTTP/1.1\r\nHost: app.foo.svc.cluster.local:8000\r\nConnection: close\r\n\r\n",
    ),
  );
  return await new Response(conn.readable).text();
}

function statOf(stats: string, name: string): number {
  const m = new RegExp(`^${name.replace(/[.|]/g, "\\$&")}: (\\d+)$`, "m").exec(stats);
  return m ? Number(m[1]) : NaN;
}

Deno.test("proxy bundle: a STRICT pair from build/proxy/main.js, Workers from workers/worker.js", async () => {
  const dir = await Deno.makeTempDir({ prefix: "proxy-bundle-" });
  // Inside the checkout, as build/proxy: deno.json's "unstable" (net, worker-options) applies there.
  const out = join(ROOT, "build", `bundle-test-${crypto.randomUUID()}`);
  const proxies: ProxyProcess[] = [];
  const app = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("from the app\n"),
  );
  const stops: (() => Promise<void>)[] = [];
  try {
    await within(bundle(out), 60_000, "deno bundle");
    const inboundPort = freePort();
    const outboundPort = freePort();
    await Deno.mkdir(join(dir, "config"));
    await Deno.writeTextFile(
      join(dir, "config", "mesh.yaml"),
      strictPairConfig("app", [`{name: http, number: 8000, targetPort: ${inboundPort}, protocol: HTTP}`]),
    );
    const ca = await startCa(join(dir, "ca"));
    stops.push(() => ca.stop());
    const meshd = await startMeshd(join(dir, "config"), { ca });
    stops.push(() => meshd.stop());
    await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
    const entry = join(out, "main.js");
    const common = { dir, ca, entry, discoveryAddress: `127.0.0.1:${meshd.securePort}`, namespace: "foo" };
    proxies.push(
      await startProxyProcess({
        ...common,
        serviceAccount: "app",
        workloadEntry: "app-1",
        address: "127.0.0.1",
        concurrency: 2,
        args: ["--inboundBindAddress=127.0.0.1", `--inbound=${inboundPort}=127.0.0.1:${app.addr.port}`],
      }),
    );
    proxies.push(
      await startProxyProcess({
        ...common,
        serviceAccount: "sleep",
        workloadEntry: "sleep-1",
        address: "127.0.0.2",
        concurrency: 1,
        args: [`--outbound=127.0.0.1:${outboundPort}`],
      }),
    );
    const [server] = proxies;
    for (let i = 0; i < 20; i++) {
      // Raw bytes (fetch sets Host from the URL), a new connection each time.
      const answer = await within(request(outboundPort), 10_000, `request ${i + 1}`);
      assert.match(answer, /^HTTP\/1\.1 200 /);
      assert.match(answer, /\r\n\r\nfrom the app\n$/);
    }
    const stats = await (await fetch(`http://127.0.0.1:${server.adminPort}/stats`)).text();
    const l = `listener.127.0.0.1_${inboundPort}`;
    assert.equal(statOf(stats, "server.concurrency"), 2);
    assert.ok(statOf(stats, `${l}.downstream_cx_mtls_total`) >= 1, "mutual TLS between the proxies");
    assert.equal(statOf(stats, `${l}.downstream_cx_plaintext_total`), 0);
    assert.ok(statOf(stats, `${l}.worker_0.downstream_cx_total`) >= 0, "worker 0 reports");
    assert.ok(statOf(stats, `${l}.worker_1.downstream_cx_total`) >= 0, "worker 1 reports");
    assert.equal(statOf(stats, `${l}.downstream_rq_2xx`), 20);
  } finally {
    for (const p of proxies) await p.stop();
    for (const stop of stops.reverse()) await stop();
    await app.shutdown();
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(out, { recursive: true }).catch(() => {});
  }
});
