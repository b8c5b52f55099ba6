/**
 * Slowloris against the real `proxy` program (a subprocess with two workers, started by an
 * in-process meshd and CA, with `--requestHeadersTimeout=3s`: short so that the test takes seconds)
 * in front of the real httpbin (Debian's python3-httpbin under gunicorn): 1,000 connections trickle a
 * request head, one header line a second, while real curl keeps asking httpbin through the same
 * inbound port. Every trickling connection must get 408 and be closed within the timeout plus the
 * sweep's margin, every curl request must succeed, and the proxy's /stats and /config_dump must show
 * the timeouts and the limit. Skipped when httpbin is not installed (`./dev test` installs it as root).
 */
import assert from "node:assert/strict";
import net from "node:net";
import { join } from "node:path";
import { startCa, startMeshd } from "../meshd_support.ts";
import { Httpbin } from "../../../proxy/inbound/test_support.ts";
import { freePort } from "../../../shared/internal/testing/free_port.ts";
import { type ProxyProcess, startProxyProcess } from "../../../proxy/test_support.ts";
import { httpbinMissing, requires } from "../../../shared/internal/testing/prerequisites.ts";
import { figure } from "../../../shared/internal/testing/figures.ts";

const CONFIG = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: foo}
spec: {address: 10.1.0.2, labels: {app: httpbin}, serviceAccount: httpbin}
`;

const SLOW = 1000;
const HEADERS_MS = 3000;
/** The sweep runs every 750 ms; 1,000 sockets, meshd and curl share 2 cores with the proxy. */
const MARGIN_MS = 2000;
/** Sockets each process (this one, the proxy) holds for the slow clients, and some to spare. */
const FDS_NEEDED = SLOW + 500;

/** One trickling connection: when it was opened and closed, and whether it was answered 408. */
interface Slow {
  openedAt: number;
  closedAt: number;
  got408: boolean;
}

function openSlow(port: number, record: Slow[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const s: Slow = { openedAt: 0, closedAt: 0, got408: false };
    let line = 0;
    let timer: ReturnType<typeof setInterval> | undefined;
    const sock = net.connect({ host: "127.0.0.1", port }, () => {
      s.openedAt = Date.now();
      record.push(s);
      sock.write("GET /headers HTTP/1.1\r\nHost: httpbin\r\n");
      timer = setInterval(() => {
        if (!sock.destroyed && sock.writable) sock.write(`x-slow-${line++}: 1\r\n`);
      }, 1000);
      resolve();
    });
    sock.on("data", (d: Uint8Array) => {
      if (new TextDecoder().decode(d).startsWith("HTTP/1.1 408 ")) s.got408 = true;
    });
    const done = () => {
      if (s.closedAt === 0) s.closedAt = Date.now();
      clearInterval(timer);
      sock.destroy();
    };
    sock.on("end", done);
    sock.on("close", done);
    sock.on("error", (e) => {
      done();
      if (s.openedAt === 0) reject(e);
    });
  });
}

async function curlGet(url: string): Promise<{ status: string; ms: number }> {
  const r = await new Deno.Command("curl", {
    args: ["-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", url],
    stdout: "piped",
    stderr: "null",
  }).output();
  const [status, seconds] = new TextDecoder().decode(r.stdout).split(" ");
  return { status, ms: Math.round(Number(seconds) * 1000) };
}

function fdLimit(): number {
  const out = new Deno.Command("sh", { args: ["-c", "ulimit -n"], stdout: "piped" }).outputSync();
  const text = new TextDecoder().decode(out.stdout).trim();
  return text === "unlimited" ? Infinity : Number(text);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

Deno.test(requires(httpbinMissing(), {
  name:
    `slowloris: ${SLOW} trickling connections are answered 408 and closed within the headers timeout; curl to httpbin keeps being served`,
  async fn() {
    const limit = fdLimit();
    assert.ok(
      limit >= FDS_NEEDED,
      `ulimit -n is ${limit}; this test holds ${FDS_NEEDED} sockets (raise it with ulimit -n ${FDS_NEEDED})`,
    );
    const dir = await Deno.makeTempDir({ prefix: "proxy-slowloris-" });
    await Deno.mkdir(join(dir, "config"));
    await Deno.writeTextFile(join(dir, "config", "workloads.yaml"), CONFIG);
    const ca = await startCa(join(dir, "ca"));
    const meshd = await startMeshd(join(dir, "config"), { ca });
    await Deno.writeTextFile(join(dir, "root-cert.pem"), ca.trustBundlePem);
    const httpbin = await Httpbin.start();
    const port = freePort();
    const slow: Slow[] = [];
    let proxy: ProxyProcess | undefined;
    try {
      proxy = await startProxyProcess({
        dir,
        ca,
        discoveryAddress: `127.0.0.1:${meshd.securePort}`,
        namespace: "foo",
        serviceAccount: "httpbin",
        workloadEntry: "httpbin-1",
        address: "10.1.0.2",
        concurrency: 2,
        args: [
          "--inboundBindAddress=127.0.0.1",
          `--inbound=${port}=127.0.0.1:${httpbin.port}`,
          `--requestHeadersTimeout=${HEADERS_MS / 1000}s`,
          "--maxConnections=5000",
        ],
      });
      const admin = async (path: string) =>
        await (await fetch(`http://127.0.0.1:${proxy!.adminPort}${path}`)).text();
      const listener =
        JSON.parse(await admin("/config_dump")).configs[1].dynamic_listeners[0].active_state.listener;
      assert.equal(listener.http_connection_manager.request_headers_timeout, "3s");
      assert.equal(listener.http_connection_manager.common_http_protocol_options.idle_timeout, "300s");
      assert.deepEqual(listener.connection_limit, { max_connections: 5000 });
      const url = `http://127.0.0.1:${port}/get`;
      assert.equal((await curlGet(url)).status, "200");

      // Real clients, one after another, for as long as the slow ones are open.
      let attacking = true;
      const served: { status: string; ms: number }[] = [];
      const legit = (async () => {
        while (attacking) {
          served.push(await curlGet(url));
          await new Promise((r) => setTimeout(r, 100));
        }
      })();

      const started = Date.now();
      for (let i = 0; i < SLOW; i += 100) {
        await Promise.all(Array.from({ length: Math.min(100, SLOW - i) }, () => openSlow(port, slow)));
      }
      const opened = Date.now() - started;
      const deadline = Date.now() + HEADERS_MS + MARGIN_MS + 1000;
      while (slow.some((s) => s.closedAt === 0) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
      attacking = false;
      await legit;

      const open = slow.filter((s) => s.closedAt === 0).length;
      const after = slow.filter((s) => s.closedAt !== 0).map((s) => s.closedAt - s.openedAt).sort((a, b) =>
        a - b
      );
      const latencies = served.map((r) => r.ms).sort((a, b) => a - b);
      const stat = new RegExp(
        `^listener\\.127\\.0\\.0\\.1_${port}\\.downstream_rq_header_timeout: (\\d+)$`,
        "m",
      );
      const timeouts = Number(stat.exec(await admin("/stats"))?.[1]);
      figure(
        `slowloris: ${SLOW} connections opened in ${opened} ms; closed ${after[0]}/${
          percentile(after, 0.5)
        }/` +
          `${percentile(after, 0.99)}/${
            after.at(-1)
          } ms (min/p50/p99/max) after opening, timeout ${HEADERS_MS} ms; ` +
          `${served.length} curl requests meanwhile, statuses ${[
            ...new Set(served.map((r) => r.status)),
          ]}, ` +
          `latency p50 ${percentile(latencies, 0.5)} ms max ${latencies.at(-1)} ms; ` +
          `downstream_rq_header_timeout ${timeouts}`,
      );
      assert.equal(slow.length, SLOW);
      assert.equal(open, 0, `${open} trickling connections still open ${HEADERS_MS + MARGIN_MS} ms later`);
      assert.ok(after[0] >= HEADERS_MS - 100, `none closed before the timeout (first after ${after[0]} ms)`);
      assert.ok(
        after.at(-1)! <= HEADERS_MS + MARGIN_MS,
        `all closed by timeout + margin (last ${after.at(-1)} ms)`,
      );
      assert.equal(slow.filter((s) => s.got408).length, SLOW, "each got 408 request header timeout");
      assert.equal(timeouts, SLOW);
      assert.ok(served.length >= 5, `curl ran ${served.length} times during the attack`);
      assert.deepEqual(served.filter((r) => r.status !== "200"), [], "every curl request succeeded");
    } finally {
      await proxy?.stop();
      await httpbin.stop();
      await meshd.stop();
      await ca.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
