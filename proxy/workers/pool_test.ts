import assert from "node:assert/strict";
import { ProxyLogger, uniformLevels } from "../logging/logger.ts";
import { EMPTY_SNAPSHOT } from "../runtime/snapshot.ts";
import { WorkerPool } from "./pool.ts";
import { freePort } from "../../shared/internal/testing/free_port.ts";

async function curl(url: string): Promise<{ code: number; out: string }> {
  const r = await new Deno.Command("curl", { args: ["-s", "-m", "5", url], stdout: "piped", stderr: "null" })
    .output();
  return { code: r.code, out: new TextDecoder().decode(r.stdout) };
}

Deno.test("two workers bind one port with SO_REUSEPORT, both accept, snapshots and counters flow", async () => {
  const app = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response("app\n"));
  const port = freePort();
  const lines: string[] = [];
  const log = new ProxyLogger(uniformLevels("error"), (l) => lines.push(l)).scope("workers");
  const pool = new WorkerPool({
    size: 2,
    listeners: [{ address: "127.0.0.1", port, appAddress: "127.0.0.1", appPort: app.addr.port }],
    levels: uniformLevels("error"),
    log,
    // The first Workers of a run load the whole data path's module graph: on 2 busy cores that took
    // over the 10 s default once (a CI run); this test checks what they do, not how fast they start.
    startTimeoutMs: 60_000,
  });
  try {
    await pool.start(EMPTY_SNAPSHOT);
    assert.equal(pool.size, 2);
    for (let i = 0; i < 40; i++) {
      const r = await curl(`http://127.0.0.1:${port}/`);
      assert.equal(r.out, "app\n");
    }
    const counters = await pool.counters();
    assert.equal(counters.length, 2);
    const perWorker = counters.map((w) => w.listeners[0].counters.downstream_cx_total);
    assert.equal(perWorker[0] + perWorker[1], 40);
    assert.ok(perWorker.every((n) => n > 0), `each worker accepted some: ${perWorker}`);
    pool.publish({ ...EMPTY_SNAPSHOT, revision: 7 });
    const start = Date.now();
    while (pool.appliedRevisions().some((r) => r !== 7)) {
      assert.ok(Date.now() - start < 2000, "snapshot reached every worker");
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    await pool.close();
    await app.shutdown();
  }
  assert.deepEqual(lines, []);
});

Deno.test("a pool of one runs on the main isolate: accepts, counters and snapshots flow, close unbinds", async () => {
  const app = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response("app\n"));
  const port = freePort();
  const pool = new WorkerPool({
    size: 1,
    listeners: [{ address: "127.0.0.1", port, appAddress: "127.0.0.1", appPort: app.addr.port }],
    levels: uniformLevels("error"),
    log: new ProxyLogger(uniformLevels("error")).scope("workers"),
  });
  try {
    assert.equal(pool.inline, true);
    await pool.start(EMPTY_SNAPSHOT);
    for (let i = 0; i < 5; i++) assert.equal((await curl(`http://127.0.0.1:${port}/`)).out, "app\n");
    const counters = await pool.counters();
    assert.deepEqual(counters.map((w) => [w.worker, w.listeners[0].counters.downstream_cx_total]), [[0, 5]]);
    pool.publish({ ...EMPTY_SNAPSHOT, revision: 3 });
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(pool.appliedRevisions(), [3]);
  } finally {
    await pool.close();
    await app.shutdown();
  }
  // Closed: the port is free again (a listener left bound would make this throw EADDRINUSE).
  Deno.listen({ hostname: "127.0.0.1", port }).close();
});

for (const [size, isolate] of [[1, false], [1, true], [2, false]] as const) {
  const kind = size === 1 && !isolate ? "inline" : "Workers";
  Deno.test(`a port already taken without SO_REUSEPORT fails the start with the reason (${size}, ${kind})`, async () => {
    const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (taken.addr as Deno.NetAddr).port;
    const pool = new WorkerPool({
      size,
      isolate,
      listeners: [{ address: "127.0.0.1", port, appAddress: "127.0.0.1", appPort: 1 }],
      levels: uniformLevels("off"),
      log: new ProxyLogger(uniformLevels("off")).scope("workers"),
    });
    assert.equal(pool.inline, kind === "inline");
    try {
      await assert.rejects(() => pool.start(EMPTY_SNAPSHOT), /EADDRINUSE|in use/i);
    } finally {
      taken.close();
      await pool.close();
    }
  });
}
