/**
 * What one client may hold on the status listener (raw sockets): a trickled request head is closed at
 * the head timeout, connections past the limit are closed at accept, an oversized head gets 431, a
 * malformed request line 400; paths are matched as sent (no decoding), HEAD gets no body.
 */
import assert from "node:assert/strict";
import { parseAppProbers } from "../../shared/internal/app_probers.ts";
import { startStatusServer, type StatusServer } from "./server.ts";
import { rawExchange, RecordingApp, statusOf } from "./test_support.ts";
import { within } from "../../shared/internal/testing/deadline.ts";

const LIMITS = { headerTimeoutMs: 400, maxConnections: 3, maxHeadBytes: 1024 };

async function withServer(fn: (s: StatusServer, app: RecordingApp) => Promise<void>): Promise<void> {
  const app = new RecordingApp();
  const probers = parseAppProbers(
    JSON.stringify({ "/app-health/app/livez": { httpGet: { path: "/ok", port: app.port } } }),
    "ISTIO_KUBE_APP_PROBERS",
  );
  const status = startStatusServer("127.0.0.1", 0, { probers, ready: () => true }, LIMITS);
  try {
    await fn(status, app);
  } finally {
    await status.close();
    await app.close();
  }
}

/** Milliseconds until the server closes `conn` (reads nothing else). */
async function msUntilClosed(conn: Deno.Conn, started: number): Promise<number> {
  const buf = new Uint8Array(1024);
  try {
    while ((await conn.read(buf)) !== null) {
      // drain
    }
  } catch {
    // reset counts as closed
  }
  return performance.now() - started;
}

Deno.test("status limits: a trickled request head is closed at the head timeout, nothing probed", async () => {
  await withServer(async (status, app) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: status.port });
    const started = performance.now();
    try {
      await conn.write(new TextEncoder().encode("GET /app-health/app/livez HTTP/1.1\r\n"));
      const trickle = setInterval(
        () => conn.write(new TextEncoder().encode("X: y\r\n")).catch(() => {}),
        100,
      );
      const ms = await within(msUntilClosed(conn, started), 5000, "the trickling connection closed").finally(
        () => clearInterval(trickle),
      );
      assert.ok(
        ms >= LIMITS.headerTimeoutMs - 50 && ms < LIMITS.headerTimeoutMs + 1500,
        `closed after ${ms} ms`,
      );
    } finally {
      conn.close();
    }
    assert.equal(app.seen.length, 0);
  });
});

Deno.test("status limits: connections past maxConnections are closed at accept; the held ones still work", async () => {
  await withServer(async (status) => {
    const held = await Promise.all(
      Array.from(
        { length: LIMITS.maxConnections },
        () => Deno.connect({ hostname: "127.0.0.1", port: status.port }),
      ),
    );
    try {
      // Let the listener accept the held ones first.
      await new Promise((r) => setTimeout(r, 100));
      const extra = await Deno.connect({ hostname: "127.0.0.1", port: status.port });
      const started = performance.now();
      const ms = await within(msUntilClosed(extra, started), 5000, "the extra connection closed").finally(
        () => extra.close(),
      );
      assert.ok(ms < LIMITS.headerTimeoutMs - 100, `the extra connection was held ${ms} ms`);
      // A held connection is still answered.
      await held[0].write(new TextEncoder().encode("GET /healthz/ready HTTP/1.1\r\nHost: p\r\n\r\n"));
      const buf = new Uint8Array(512);
      const n = await held[0].read(buf);
      assert.equal(statusOf(new TextDecoder().decode(buf.subarray(0, n ?? 0))), 200);
    } finally {
      for (const c of held) c.close();
    }
  });
});

Deno.test("status limits: oversized head 431, bad request lines 400, paths as sent, HEAD without body", async () => {
  await withServer(async (status, app) => {
    const big = await rawExchange(
      status.port,
      `GET /app-health/app/livez HTTP/1.1\r\nX: ${"a".repeat(2000)}\r\n\r\n`,
    );
    assert.equal(statusOf(big), 431);
    for (
      const line of [
        "get /app-health/app/livez HTTP/1.1",
        "GET /app-health/app/livez HTTP/2.0",
        "GET  /app-health/app/livez HTTP/1.1",
        "GET /app-health/app/livez\tx HTTP/1.1",
        "GET /app-health/app/livez",
      ]
    ) {
      assert.equal(statusOf(await rawExchange(status.port, `${line}\r\nHost: p\r\n\r\n`)), 400, line);
    }
    // No percent-decoding: an encoded name is another path.
    for (const target of ["/app-health/app/%6civez", "/app-health/%61pp/livez", "//app-health/app/livez"]) {
      assert.equal(
        statusOf(await rawExchange(status.port, `GET ${target} HTTP/1.1\r\nHost: p\r\n\r\n`)),
        404,
      );
    }
    assert.equal(app.seen.length, 0);
    const head = await rawExchange(status.port, "HEAD /app-health/app/livez HTTP/1.1\r\nHost: p\r\n\r\n");
    assert.equal(statusOf(head), 200);
    assert.match(head, /\r\nContent-Length: \d+\r\nConnection: close\r\n\r\n$/);
    assert.equal(app.seen.length, 1);
  });
});
