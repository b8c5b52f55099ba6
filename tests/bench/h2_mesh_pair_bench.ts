/**
 * HTTP/2 through the proxy pair (proxy/h2proxy/mesh_pair_test_support.ts: an outbound listener and
 * an inbound listener under STRICT mutual TLS, both on this process's main thread) and against
 * nghttpd (h2c) directly: h2load (nghttp2-client) requests per second, and the connections the
 * proxies opened for them (multiplexing). Small GETs of a 19-octet file.
 *
 * Run: ./dev deno run -A tests/bench/h2_mesh_pair_bench.ts [--n 20000] [--c 4] [--m 10]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { run, startNghttpd } from "../../proxy/h2proxy/h2_apps_test_support.ts";
import { ECHO_HOST, ECHO_PORT, pairCerts, startPair } from "../../proxy/h2proxy/mesh_pair_test_support.ts";

const { values } = parseArgs({
  options: {
    n: { type: "string", default: "20000" },
    c: { type: "string", default: "4" },
    m: { type: "string", default: "10" },
  },
});

/** h2load's "finished in ..., N req/s" and its succeeded count. */
async function h2load(url: string, authority: string): Promise<{ rps: number; ok: number; text: string }> {
  const r = await run("h2load", [
    "-n",
    values.n!,
    "-c",
    values.c!,
    "-m",
    values.m!,
    "-H",
    `:authority: ${authority}`,
    url,
  ]);
  const rps = Number(/finished in [^,]+, ([\d.]+) req\/s/.exec(r.stdout)?.[1] ?? NaN);
  const ok = Number(/(\d+) succeeded/.exec(r.stdout)?.[1] ?? NaN);
  return { rps, ok, text: r.stdout };
}

const dir = await Deno.makeTempDir({ prefix: "h2bench-" });
await Deno.writeTextFile(`${dir}/index.html`, "hello from nghttpd\n");
const nghttpd = await startNghttpd(dir);
const pair = await startPair(await pairCerts(), nghttpd.port, "HTTP2");
try {
  const authority = `${ECHO_HOST}:${ECHO_PORT}`;
  await h2load(`http://${pair.outboundAddress}/index.html`, authority); // warm-up
  const direct = await h2load(`http://127.0.0.1:${nghttpd.port}/index.html`, authority);
  const proxied = await h2load(`http://${pair.outboundAddress}/index.html`, authority);
  const out = pair.outboundStats.snapshot(), inb = pair.inboundStats.snapshot();
  console.log(`h2load -n ${values.n} -c ${values.c} -m ${values.m}, GET of 19 octets`);
  console.log(`direct to nghttpd:        ${direct.rps.toFixed(0)} req/s (${direct.ok} succeeded)`);
  console.log(
    `through the pair (mTLS):  ${proxied.rps.toFixed(0)} req/s (${proxied.ok} succeeded), ratio ${
      (proxied.rps / direct.rps).toFixed(2)
    }`,
  );
  console.log(
    `connections between the proxies: ${out.upstream_cx_total}, to the app: ${inb.upstream_cx_total}, ` +
      `for ${2 * Number(values.n)} streams on ${2 * Number(values.c)} client connections (warm-up included)`,
  );
} finally {
  await pair.stop();
  await nghttpd.stop();
  await Deno.remove(dir, { recursive: true });
}
