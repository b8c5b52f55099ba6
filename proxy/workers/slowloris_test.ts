/**
 * Slowloris against the proxy as it runs (a {@link WorkerPool} of two workers, each with the inbound
 * listener on one SO_REUSEPORT port, the limits passed as the flags pass them) in front of the real
 * httpbin (Debian's python3-httpbin under gunicorn): 1,000 connections trickle a request head, one
 * header line a second, while real curl keeps asking httpbin through the same port. Every trickling
 * connection must get 408 and be closed within the request-headers timeout (3 s here, set short so
 * that the test takes seconds) plus the sweep's margin, and every curl request must succeed.
 * Skipped when httpbin is not installed (`./dev test` installs it as root).
 */
import assert from "node:assert/strict";
import net from "node:net";
import { hasHttpbin, Httpbin, snapshotOf } from "../inbound/test_support.ts";
import { freePort } from "../inbound/test_support.ts";
import { ProxyLogger, uniformLevels } from "../logging/logger.ts";
import { WorkerPool } from "./pool.ts";

const SLOW = 1000;
const HEADERS_MS = 3000;
/** The sweep runs every 750 ms; 1,000 sockets and curl share 2 cores with the proxy. */
const MARGIN_MS = 2000;
/** Sockets this process holds: the slow clients' and the proxy's own for them, and some to spare. */
const FDS_NEEDED = 2 * SLOW + 500;

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

Deno.test({
  name:
    `slowloris: ${SLOW} trickling connections are answered 408 and closed within the headers timeout; curl to httpbin keeps being served`,
  ignore: !hasHttpbin(),
  async fn() {
    const limit = fdLimit();
    assert.ok(
      limit >= FDS_NEEDED,
      `ulimit -n is ${limit}; this test holds ${FDS_NEEDED} sockets (raise it with ulimit -n ${FDS_NEEDED})`,
    );
    const httpbin = await Httpbin.start();
    const port = freePort();
    const pool = new WorkerPool({
      size: 2,
      listeners: [{ address: "127.0.0.1", port, appAddress: "127.0.0.1", appPort: httpbin.port }],
      levels: uniformLevels("error"),
      log: new ProxyLogger(uniformLevels("error")).scope("workers"),
      connectionLimits: {
        requestHeadersTimeoutMs: HEADERS_MS,
        idleTimeoutMs: 300_000,
        maxConnections: 10_000,
      },
    });
    const slow: Slow[] = [];
    try {
      await pool.start(snapshotOf("PERMISSIVE", undefined));
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
      const counters = await pool.counters();
      const timeouts = counters.reduce((n, w) => n + w.listeners[0].counters.downstream_rq_header_timeout, 0);
      console.log(
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
      await pool.close();
      await httpbin.stop();
    }
  },
});
